package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage"
	"github.com/cockroachdb/pebble/record"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// What Pebble v1.1 does with damage, and what this file adds:
//
//   - Tables (*.sst): every block carries a checksum that Pebble verifies
//     whenever it reads the block, so a flipped byte fails the read that
//     meets it (corrupt wraps that error with storage.ErrCorrupt and the
//     file's name). A table listed in the MANIFEST but missing or of the
//     wrong size makes pebble.Open fail. Blocks are only read when needed,
//     so Open also checks every table's blocks (verifyTables) when the
//     tables are small enough to read at start.
//   - Write-ahead logs (*.log) and the MANIFEST are sequences of
//     checksummed records. On replay Pebble stops at the first bad record
//     and treats the rest as never written: right for a record torn by a
//     crash at the end of the file, but a flipped byte in the middle
//     silently drops every later record (seen: a third of the items gone,
//     new writes accepted). checkLogs refuses a log with a bad record that
//     is followed by good ones. In a write-ahead log, damage to the very
//     last record cannot be told apart from a torn write (or from the
//     stale tail of a recycled file) and is, as Pebble does, taken as one;
//     in the MANIFEST, a last chunk that is complete but fails its
//     checksum is damage (completeBadChunk).

// corrupt wraps a Pebble error that reports damaged data with
// storage.ErrCorrupt and, where the message names a table by number, the
// table's path. Other errors pass unchanged.
func corrupt(dir string, err error) error {
	if err == nil || errors.Is(err, storage.ErrCorrupt) {
		return err
	}
	if !pebble.IsCorruptionError(err) && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if m := tableNum.FindStringSubmatch(err.Error()); m != nil && dir != "" {
		return fmt.Errorf("%w: file %s: %w", storage.ErrCorrupt, filepath.Join(dir, m[1]+".sst"), err)
	}
	return fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
}

// tableNum finds the table number in Pebble's messages about tables
// ("invalid table 000016 (checksum mismatch ...)", "backing file 000016").
var tableNum = regexp.MustCompile(`(?:table|file) (\d{6,})`)

// checkLogs reads every write-ahead log and the current MANIFEST in dir
// and fails, naming the file and offset, when one holds a bad record
// followed by a good one. It must run under the directory lock, before
// Pebble opens (and starts appending to) the files.
func checkLogs(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		num, ok := strings.CutSuffix(name, ".log")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		// A write-ahead log's chunks carry the low 32 bits of its number,
		// so records left by an earlier use of a recycled file end it.
		if err := checkRecords(filepath.Join(dir, name), pebble.FileNum(n)); err != nil {
			return err
		}
	}
	desc, err := pebble.Peek(dir, vfs.Default)
	if err != nil {
		return fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
	}
	if !desc.Exists {
		// Without the marker that names its MANIFEST, Pebble takes a
		// directory for a new store: it writes an empty MANIFEST, and
		// then deletes every table and log as belonging to none.
		for _, e := range ents {
			if name := e.Name(); strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".log") || strings.HasPrefix(name, "MANIFEST-") {
				return fmt.Errorf("%w: %s holds %s but no marker naming its MANIFEST (marker.manifest.*); its tables and logs were not opened, so that nothing of them is lost: restore the directory from a backup", storage.ErrCorrupt, dir, name)
			}
		}
	}
	if desc.Exists && desc.ManifestFilename != "" {
		// The MANIFEST's chunks carry no log number.
		if err := checkRecords(desc.ManifestFilename, 0); err != nil {
			return err
		}
	}
	return nil
}

// blockSize is the record format's block: a record reader resynchronises
// at block boundaries.
const blockSize = 32 << 10

// checkRecords reads the record file at path and reports damage when a
// bad record is followed, in a later block, by a good one.
func checkRecords(path string, logNum pebble.FileNum) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	bad := int64(-1) // offset of the first bad record
	var badErr error
	for start := int64(0); start < size; {
		rr := record.NewReader(io.NewSectionReader(f, start, size-start), logNum)
		var off int64
		for {
			off = start + rr.Offset()
			r, err := rr.Next()
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				if !record.IsInvalidRecord(err) {
					return fmt.Errorf("read %s: %w", path, err)
				}
				if bad < 0 {
					bad, badErr = off, err
				}
				break
			}
			if bad >= 0 {
				return fmt.Errorf("%w: file %s has a bad record at offset %d (%v) followed by good records: the records after it would be lost",
					storage.ErrCorrupt, path, bad, badErr)
			}
		}
		// Resume at the block after the one holding the bad record, as
		// Pebble's own recovery would, and see whether anything good
		// follows.
		start = (off/blockSize + 1) * blockSize
	}
	if bad >= 0 && logNum == 0 {
		// The MANIFEST is never recycled, and each of its records is
		// written whole before the next begins: a torn write leaves a
		// last chunk that is cut short, while a chunk that is all there
		// but fails its checksum was damaged after it was written.
		if at, damaged, err := completeBadChunk(f, bad, size); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		} else if damaged {
			return fmt.Errorf("%w: file %s has a damaged record at offset %d (%v): its chunk at offset %d is complete but fails its checksum",
				storage.ErrCorrupt, path, bad, badErr, at)
		}
	}
	return nil
}

// legacyHeader is the size of a chunk header in a file whose chunks carry
// no log number: checksum (4 bytes), length (2) and type (1).
const legacyHeader = 7

// completeBadChunk walks the chunks of the record at off and reports the
// first whose bytes are all in the file, are not all zero (space a crash
// left allocated but unwritten), and fail their checksum: damage rather
// than a torn write.
func completeBadChunk(f *os.File, off, size int64) (int64, bool, error) {
	buf := make([]byte, blockSize)
	for off < size {
		if blockSize-off%blockSize < legacyHeader {
			off = (off/blockSize + 1) * blockSize // the block's zeroed trailer
			continue
		}
		n := min(blockSize-off%blockSize, size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return 0, false, err
		}
		chunk := buf[:n]
		if len(chunk) < legacyHeader {
			return 0, false, nil // a header cut short
		}
		length := int(binary.LittleEndian.Uint16(chunk[4:6]))
		if legacyHeader+length > len(chunk) {
			return 0, false, nil // a payload cut short (or a damaged length: not told apart)
		}
		body := chunk[:legacyHeader+length]
		if allZero(body) {
			return 0, false, nil
		}
		want := binary.LittleEndian.Uint32(body[0:4])
		if maskedCRC(body[6:]) != want {
			return off, true, nil
		}
		off += int64(legacyHeader + length)
	}
	return 0, false, nil
}

// maskedCRC is the record format's checksum: CRC-32C, rotated and offset
// so that a checksum of data holding checksums stays well spread.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// verifyTables reads every block of every table of db and checks its
// checksum, unless the tables hold more than limit bytes (limit < 0: no
// bound). It returns whether it checked.
func verifyTables(db *pebble.DB, dir string, limit int64) (bool, error) {
	levels, err := db.SSTables()
	if err != nil {
		return false, err
	}
	var total int64
	var nums []uint64
	seen := map[uint64]bool{}
	for _, level := range levels {
		for _, t := range level {
			n := uint64(t.BackingSSTNum)
			if seen[n] {
				continue
			}
			seen[n] = true
			nums = append(nums, n)
			total += int64(t.Size)
		}
	}
	if limit >= 0 && total > limit {
		return false, nil
	}
	for _, n := range nums {
		path := filepath.Join(dir, fmt.Sprintf("%06d.sst", n))
		err := verifyTable(path)
		if errors.Is(err, os.ErrNotExist) && !live(db, n) {
			continue // compacted away since the listing
		}
		if err != nil {
			return true, fmt.Errorf("%w: file %s: %w", storage.ErrCorrupt, path, err)
		}
	}
	return true, nil
}

// live reports whether table n is still part of db.
func live(db *pebble.DB, n uint64) bool {
	levels, err := db.SSTables()
	if err != nil {
		return true
	}
	for _, level := range levels {
		for _, t := range level {
			if uint64(t.BackingSSTNum) == n {
				return true
			}
		}
	}
	return false
}

// verifyTable checks the checksum of every block of the table at path.
func verifyTable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	r, err := sstable.NewReader(&fileReadable{f: f, size: fi.Size()},
		sstable.ReaderOptions{MergerName: pebble.DefaultMerger.Name})
	if err != nil {
		return err // NewReader closed the file
	}
	err = r.ValidateBlockChecksums()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileReadable is an objstorage.Readable over a local file, for reading
// tables outside the database.
type fileReadable struct {
	f    *os.File
	size int64
}

var (
	_ objstorage.Readable   = (*fileReadable)(nil)
	_ objstorage.ReadHandle = fileReadHandle{}
)

func (r *fileReadable) ReadAt(_ context.Context, p []byte, off int64) error {
	_, err := r.f.ReadAt(p, off)
	return err
}

func (r *fileReadable) Close() error { return r.f.Close() }
func (r *fileReadable) Size() int64  { return r.size }
func (r *fileReadable) NewReadHandle(context.Context) objstorage.ReadHandle {
	return fileReadHandle{r}
}

type fileReadHandle struct{ r *fileReadable }

func (h fileReadHandle) ReadAt(ctx context.Context, p []byte, off int64) error {
	return h.r.ReadAt(ctx, p, off)
}
func (fileReadHandle) Close() error                                 { return nil }
func (fileReadHandle) SetupForCompaction()                          {}
func (fileReadHandle) RecordCacheHit(context.Context, int64, int64) {}
