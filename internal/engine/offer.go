package engine

import (
	"context"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// offerRecord is provisioned throughput for a database or container. The
// numbers are stored and returned; enforcing them is the request-unit
// budget's job.
type offerRecord struct {
	Rid          string `json:"rid"`
	ResourceSelf string `json:"resource"`
	ResourceRid  string `json:"resourceRid"`
	Ts           int64  `json:"ts"`
	Etag         string `json:"etag"`
	Manual       int    `json:"manual,omitempty"`
	AutoscaleMax int    `json:"autoscaleMax,omitempty"`
	Increment    int    `json:"increment,omitempty"`
}

const offerAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// offerRid renders a counter as a short lower-case id: the SDKs sign offer
// links lower-cased, so an all-lower-case rid avoids any ambiguity.
func offerRid(n uint64) string {
	var b strings.Builder
	for i := 0; i < 4 || n > 0; i++ {
		b.WriteByte(offerAlphabet[n%uint64(len(offerAlphabet))])
		n /= uint64(len(offerAlphabet))
	}
	return b.String()
}

func (o *offerRecord) body() document.Value {
	var content document.Value
	if o.AutoscaleMax > 0 {
		auto := []document.Field{{Name: "maxThroughput", Value: document.Int(int64(o.AutoscaleMax))}}
		if o.Increment > 0 {
			auto = append(auto, document.Field{Name: "autoUpgradePolicy", Value: document.Obj([]document.Field{
				{Name: "throughputPolicy", Value: document.Obj([]document.Field{{Name: "incrementPercent", Value: document.Int(int64(o.Increment))}})},
			})})
		}
		// The service reports an autoscale offer's current RU/s too,
		// which is a tenth of the maximum when idle; the Python and Java
		// SDKs read it after every throughput call.
		content = document.Obj([]document.Field{
			{Name: "offerThroughput", Value: document.Int(int64(o.AutoscaleMax / 10))},
			{Name: "offerAutopilotSettings", Value: document.Obj(auto)},
		})
	} else {
		content = document.Obj([]document.Field{
			{Name: "offerThroughput", Value: document.Int(int64(o.Manual))},
			{Name: "offerIsRUPerMinuteThroughputEnabled", Value: document.BoolValue(false)},
		})
	}
	return document.Obj([]document.Field{
		{Name: "resource", Value: document.Str(o.ResourceSelf)},
		{Name: "offerType", Value: document.Str("Invalid")},
		{Name: "offerResourceId", Value: document.Str(o.ResourceRid)},
		{Name: "offerVersion", Value: document.Str("V2")},
		{Name: "content", Value: content},
		{Name: "id", Value: document.Str(o.Rid)},
		{Name: "_rid", Value: document.Str(o.Rid)},
		{Name: "_self", Value: document.Str("offers/" + o.Rid + "/")},
		{Name: "_etag", Value: document.Str(o.Etag)},
		{Name: "_ts", Value: document.Int(o.Ts)},
	})
}

// defaultThroughput is the manual RU/s of a container created without
// throughput outside a database that shares its own.
const defaultThroughput = 400

// validateThroughput checks manual RU/s (400 to 1,000,000 in steps of
// 100) and an autoscale maximum (1,000 to 1,000,000 in steps of 1,000),
// with the service's messages.
func validateThroughput(tp *Throughput) *Error {
	switch {
	case tp.Autoscale:
		if tp.AutoscaleMax < 1000 || tp.AutoscaleMax > 1000000 || tp.AutoscaleMax%1000 != 0 {
			return badAutoscaleMax()
		}
	case tp.Manual < 400 || tp.Manual > 1000000 || tp.Manual%100 != 0:
		return errorf(BadRequest, "The offer should have valid throughput values between 400 and 1000000 inclusive in increments of 100.")
	}
	return nil
}

func badAutoscaleMax() *Error {
	return errorf(BadRequest, "The offer should have valid throughput values between 1000 and 1000000 inclusive in increments of 1000.")
}

// ParseAutoscale reads autoscale settings, {"maxThroughput": n,
// "autoUpgradePolicy": {"throughputPolicy": {"incrementPercent": p}}}, as
// the x-ms-cosmos-offer-autopilot-settings header and an offer's
// offerAutopilotSettings carry them. The ranges are validateThroughput's.
func ParseAutoscale(s document.Value) (Throughput, error) {
	if s.Kind() != document.Object || !s.Get("maxThroughput").IsInt() {
		return Throughput{}, badAutoscaleMax()
	}
	tp := Throughput{Autoscale: true, AutoscaleMax: int(s.Get("maxThroughput").Int())}
	if inc := s.Get("autoUpgradePolicy").Get("throughputPolicy").Get("incrementPercent"); inc.IsDefined() {
		if !inc.IsInt() || inc.Int() < 0 || inc.Int() > 100 {
			return Throughput{}, errorf(BadRequest, "The autoscale setting's incrementPercent must be an integer from 0 to 100.")
		}
		tp.AutoscaleIncrementPercent = int(inc.Int())
	}
	return tp, nil
}

func (e *Engine) createOffer(tx storage.Txn, now time.Time, tp *Throughput, self, resourceRid string) (*offerRecord, error) {
	if derr := validateThroughput(tp); derr != nil {
		return nil, derr
	}
	n, err := nextCounter(tx, "offer")
	if err != nil {
		return nil, err
	}
	o := &offerRecord{Rid: offerRid(n), ResourceSelf: self, ResourceRid: resourceRid, Ts: now.Unix(),
		Manual: tp.Manual, AutoscaleMax: tp.AutoscaleMax, Increment: tp.AutoscaleIncrementPercent}
	o.Etag = etagFor([]byte(o.Rid), n)
	return o, setJSON(tx, offerKey(o.Rid), o)
}

// ListOffers returns every offer.
func (e *Engine) ListOffers(ctx context.Context) ([]document.Value, error) {
	var out []document.Value
	err := e.store.View(ctx, func(r storage.Reader) error {
		return scanPrefix(r, []byte{famOffer}, func(_, v []byte) (bool, error) {
			var o offerRecord
			if err := unmarshalRecord(v, &o); err != nil {
				return false, err
			}
			out = append(out, o.body())
			return true, nil
		})
	})
	return out, err
}

// ReadOffer returns one offer by rid (case-insensitively: the SDKs sign
// offer links lower-cased).
func (e *Engine) ReadOffer(ctx context.Context, rid string) (*Resource, error) {
	var o offerRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		found, err := getJSON(r, offerKey(strings.ToLower(rid)), &o)
		if err != nil {
			return err
		}
		if !found {
			return errorf(NotFound, "Offer '%s' not found.", rid)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Resource{Body: o.body(), Etag: o.Etag, Rid: o.Rid}, nil
}

// OfferMigration is what a replace of an offer asks about its kind: the
// service changes an offer between manual throughput and autoscale only
// when a header asks for it.
type OfferMigration int

// The migrations a replace may ask for.
const (
	// KeepKind replaces the offer's throughput within its kind.
	KeepKind OfferMigration = iota
	// ToAutoscale (x-ms-cosmos-migrate-offer-to-autopilot) makes a manual
	// offer autoscale, at a maximum the server chooses.
	ToAutoscale
	// ToManual (x-ms-cosmos-migrate-offer-to-manual-throughput) makes an
	// autoscale offer manual, at its maximum.
	ToManual
)

// The service's refusals of a change of kind without the header that asks
// for it, or with a content that does not fit it.
const (
	errToAutoscale = "x-ms-cosmos-migrate-offer-to-autopilot must be supplied and offercontent must not contain autopilotSettings for migration from manual throughput to autoscale."
	errToManual    = "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied and offercontent must contain autopilotSettings for migration of autoscale collection to manual throughput."
)

// ReplaceOffer changes an offer's throughput from a full offer body. A
// non-empty ifMatch other than "*" must be the offer's etag, or nothing
// changes (412).
//
// The body's id and _rid, when it carries them (the SDKs send back the
// offer they read), must name the offer addressed, as the service checks.
//
// The offer keeps its kind, manual or autoscale, unless migrate asks to
// change it, as the service does (its autoscale FAQ: the SDKs cannot
// change the kind, a request with the header can). A migration takes no
// throughput from the body: a manual offer becomes autoscale with the
// maximum MAX(1,000, its RU/s) rounded to the nearest 1,000 (the FAQ's
// formula, whose terms for storage and for the highest throughput ever
// provisioned are left out here), and an autoscale offer becomes manual
// at its maximum.
func (e *Engine) ReplaceOffer(ctx context.Context, rid string, body document.Value, ifMatch string, migrate OfferMigration) (*Resource, error) {
	for _, name := range []string{"id", "_rid"} {
		if v := body.Get(name); v.IsDefined() && (v.Kind() != document.String || !strings.EqualFold(v.Str(), rid)) {
			return nil, errorf(BadRequest, "The offer's %s %s does not match the offer '%s' addressed.", name, v.String(), rid)
		}
	}
	content := body.Get("content")
	if content.Kind() != document.Object {
		return nil, errorf(BadRequest, "The offer must have a 'content' object.")
	}
	auto := content.Get("offerAutopilotSettings")
	toAuto := auto.Kind() == document.Object
	var tp Throughput
	if migrate == KeepKind {
		if toAuto {
			var err error
			if tp, err = ParseAutoscale(auto); err != nil {
				return nil, err
			}
		} else if t := content.Get("offerThroughput"); t.Kind() == document.Number {
			if !t.IsInt() {
				return nil, errorf(BadRequest, "The offer should have valid throughput values between 400 and 1000000 inclusive in increments of 100.")
			}
			tp.Manual = int(t.Int())
		} else {
			return nil, errorf(BadRequest, "The offer content must set 'offerThroughput' or 'offerAutopilotSettings'.")
		}
		if derr := validateThroughput(&tp); derr != nil {
			return nil, derr
		}
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	var o offerRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		// A transaction may run again: each run reads the offer afresh
		// (its fields left empty are omitted from the record).
		o = offerRecord{}
		found, err := getJSON(tx, offerKey(strings.ToLower(rid)), &o)
		if err != nil {
			return err
		}
		if !found {
			return errorf(NotFound, "Offer '%s' not found.", rid)
		}
		if staleMatch(ifMatch, o.Etag) {
			return preconditionFailed()
		}
		isAuto := o.AutoscaleMax > 0
		switch {
		case migrate == ToAutoscale && isAuto:
			return errorf(BadRequest, "The offer '%s' is already autoscale: x-ms-cosmos-migrate-offer-to-autopilot migrates a manual offer.", o.Rid)
		case migrate == ToManual && !isAuto:
			return errorf(BadRequest, "The offer '%s' already has manual throughput: x-ms-cosmos-migrate-offer-to-manual-throughput migrates an autoscale offer.", o.Rid)
		case migrate == ToAutoscale && toAuto, migrate == KeepKind && !isAuto && toAuto:
			return errorf(BadRequest, errToAutoscale)
		case migrate == ToManual && !toAuto, migrate == KeepKind && isAuto && !toAuto:
			return errorf(BadRequest, errToManual)
		case migrate == ToAutoscale:
			tp = Throughput{Autoscale: true, AutoscaleMax: max(1000, (o.Manual+500)/1000*1000)}
		case migrate == ToManual:
			tp = Throughput{Manual: o.AutoscaleMax}
		}
		n, err := nextCounter(tx, "offer-etag")
		if err != nil {
			return err
		}
		o.Manual, o.AutoscaleMax, o.Increment = tp.Manual, tp.AutoscaleMax, tp.AutoscaleIncrementPercent
		o.Ts = now.Unix()
		o.Etag = etagFor([]byte(o.Rid), n<<20)
		return setJSON(tx, offerKey(o.Rid), &o)
	})
	if err != nil {
		return nil, err
	}
	return &Resource{Body: o.body(), Etag: o.Etag, Rid: o.Rid}, nil
}

// Provisioned is the throughput requests on a container draw on: Key
// names the budget (the container's, or its database's when the database
// shares throughput), RUPerSecond its size (the manual throughput, or the
// autoscale maximum); 0 when nothing is provisioned.
type Provisioned struct {
	Key         string
	RUPerSecond float64
}

// ProvisionedFor finds the throughput of container coll of database db.
func (e *Engine) ProvisionedFor(ctx context.Context, db, coll string) (Provisioned, error) {
	var p Provisioned
	err := e.store.View(ctx, func(r storage.Reader) error {
		c, err := e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		offer, key := c.OfferRid, c.ridString()
		if offer == "" {
			d, err := e.loadDatabase(r, db)
			if err != nil {
				return err
			}
			offer, key = d.OfferRid, d.ridString()
		}
		if offer == "" {
			return nil
		}
		var o offerRecord
		if _, err := getJSON(r, offerKey(offer), &o); err != nil {
			return err
		}
		p = Provisioned{Key: key, RUPerSecond: float64(max(o.Manual, o.AutoscaleMax))}
		return nil
	})
	return p, err
}
