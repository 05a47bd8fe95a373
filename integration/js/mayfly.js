// What every JavaScript SDK test needs to reach the Mayfly under test.
//
// Environment:
//   MAYFLY_ENDPOINT  default https://localhost:8081/
//   MAYFLY_KEY       default the well-known emulator key
//   MAYFLY_CA_FILE   the server's certificate in PEM; when unset it is
//                    fetched, unverified, from /_explorer/emulator.pem.
// The SDK's own connection always verifies the certificate against that PEM.

import { readFile } from "node:fs/promises";
import https from "node:https";

export const endpoint = process.env.MAYFLY_ENDPOINT || "https://localhost:8081/";
export const key =
  process.env.MAYFLY_KEY ||
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

export async function serverCertificate() {
  if (process.env.MAYFLY_CA_FILE) {
    return readFile(process.env.MAYFLY_CA_FILE, "utf8");
  }
  const url = new URL("/_explorer/emulator.pem", endpoint);
  return new Promise((resolve, reject) => {
    https
      .get(url, { rejectUnauthorized: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(body)
            : reject(new Error(`GET ${url}: ${res.statusCode} ${body}`)),
        );
      })
      .on("error", reject);
  });
}

// The SDK reports most failures by throwing an error carrying .code (the
// HTTP status); a point read of a missing item instead resolves with
// statusCode 404. statusOf covers both.
export async function statusOf(promise) {
  try {
    return (await promise).statusCode;
  } catch (err) {
    if (typeof err.code === "number") return err.code;
    throw err;
  }
}
