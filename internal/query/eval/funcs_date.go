package eval

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Date and time values are ISO 8601 UTC strings with seven fractional
// digits, "YYYY-MM-DDThh:mm:ss.fffffffZ"; ticks are 100-nanosecond
// intervals and timestamps milliseconds, both since the Unix epoch.

const (
	ticksPerSecond = 10_000_000
	ticksPerDay    = 86400 * ticksPerSecond
)

var minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
var maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)

func formatDateTime(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%07dZ", t.Year(), int(t.Month()), t.Day(),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/100)
}

func dateValue(t time.Time) document.Value {
	if t.Before(minTime) || t.After(maxTime) {
		return undef
	}
	return document.Str(formatDateTime(t))
}

// parseDateTime reads YYYY-MM-DD[Thh:mm[:ss[.fffffff]]][Z|±hh:mm].
func parseDateTime(v document.Value) (time.Time, bool) {
	s, ok := strArg(v)
	if !ok {
		return time.Time{}, false
	}
	num := func(i, n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		x := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			x = x*10 + int(c-'0')
		}
		return x, true
	}
	expect := func(i int, c byte) bool { return i < len(s) && s[i] == c }
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	if !ok1 || !ok2 || !ok3 || !expect(4, '-') || !expect(7, '-') {
		return time.Time{}, false
	}
	var h, mi, sec, frac int
	i := 10
	if expect(i, 'T') {
		var okh, okm bool
		h, okh = num(11, 2)
		mi, okm = num(14, 2)
		if !okh || !okm || !expect(13, ':') {
			return time.Time{}, false
		}
		i = 16
		if expect(i, ':') {
			var oks bool
			if sec, oks = num(17, 2); !oks {
				return time.Time{}, false
			}
			i = 19
			if expect(i, '.') {
				i++
				digits := 0
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					if digits < 7 {
						frac = frac*10 + int(s[i]-'0')
					}
					digits++
					i++
				}
				if digits == 0 || digits > 7 {
					return time.Time{}, false
				}
				for ; digits < 7; digits++ {
					frac *= 10
				}
			}
		}
	}
	offset := 0
	switch {
	case i == len(s):
	case s[i] == 'Z' && i+1 == len(s):
	case (s[i] == '+' || s[i] == '-') && i+6 == len(s) && s[i+3] == ':':
		oh, ok1 := num(i+1, 2)
		om, ok2 := num(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = oh*3600 + om*60
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	if y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, frac*100, time.UTC)
	if t.Day() != d {
		return time.Time{}, false // February 30th and the like
	}
	return t.Add(-time.Duration(offset) * time.Second), true
}

// ticksOf returns the ticks since the Unix epoch.
func ticksOf(t time.Time) int64 {
	return t.Unix()*ticksPerSecond + int64(t.Nanosecond()/100)
}

// binMax is a bin longer than the span of every date DateTimeBin takes
// (years 1601 to 9999, about 2.6e17 ticks either way of 1970), small
// enough that an origin less one bin stays an int64.
const binMax = int64(1) << 62

func fromTicks(ticks int64) time.Time {
	sec, rem := ticks/ticksPerSecond, ticks%ticksPerSecond
	if rem < 0 {
		sec--
		rem += ticksPerSecond
	}
	return time.Unix(sec, rem*100).UTC()
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

type datePart uint8

const (
	partYear datePart = iota
	partMonth
	partDay
	partHour
	partMinute
	partSecond
	partMillisecond
	partMicrosecond
	partNanosecond
)

var dateParts = map[string]datePart{
	"year": partYear, "yyyy": partYear, "yy": partYear,
	"month": partMonth, "mm": partMonth, "m": partMonth,
	"day": partDay, "dd": partDay, "d": partDay,
	"hour": partHour, "hh": partHour,
	"minute": partMinute, "mi": partMinute, "n": partMinute,
	"second": partSecond, "ss": partSecond, "s": partSecond,
	"millisecond": partMillisecond, "ms": partMillisecond,
	"microsecond": partMicrosecond, "mcs": partMicrosecond,
	"nanosecond": partNanosecond, "ns": partNanosecond,
}

// partTicks is the length of the fixed-size parts, in ticks (nanoseconds
// are a hundredth of a tick and handled apart).
var partTicks = map[datePart]int64{
	partDay: ticksPerDay, partHour: 3600 * ticksPerSecond, partMinute: 60 * ticksPerSecond,
	partSecond: ticksPerSecond, partMillisecond: 10_000, partMicrosecond: 10,
}

func partArg(v document.Value) (datePart, bool) {
	s, ok := strArg(v)
	if !ok {
		return 0, false
	}
	p, ok := dateParts[strings.ToLower(s)]
	return p, ok
}

// addMonths adds months keeping the day when it exists and clamping to the
// month's last day otherwise (January 31st plus one month is February
// 28th or 29th).
func addMonths(t time.Time, n int64) (time.Time, bool) {
	m := int64(t.Year())*12 + int64(t.Month()-1) + n
	if m < 12 || m > 9999*12+11 {
		return time.Time{}, false
	}
	y, mo := int(m/12), time.Month(m%12+1)
	d := t.Day()
	if last := time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > last {
		d = last
	}
	return time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), true
}

func init() {
	register(0, 0, func(c *ctx, _ []document.Value) (document.Value, error) {
		return document.Str(formatDateTime(c.prog.opts.Now)), nil
	}, "GetCurrentDateTime", "GetCurrentDateTimeStatic")
	register(0, 0, func(c *ctx, _ []document.Value) (document.Value, error) {
		return document.Int(floorDiv(ticksOf(c.prog.opts.Now), 10_000)), nil
	}, "GetCurrentTimestamp", "GetCurrentTimestampStatic")
	register(0, 0, func(c *ctx, _ []document.Value) (document.Value, error) {
		return document.Int(ticksOf(c.prog.opts.Now)), nil
	}, "GetCurrentTicks", "GetCurrentTicksStatic")

	pure(3, 3, func(a []document.Value) document.Value {
		part, ok1 := partArg(a[0])
		n, ok2 := intArg(a[1])
		t, ok3 := parseDateTime(a[2])
		// A number that is not an integer is undefined, as the
		// reference says, not truncated.
		if !ok1 || !ok2 || !ok3 || float64(n) != a[1].Float() {
			return undef
		}
		switch part {
		case partYear, partMonth:
			if part == partYear {
				if n > 10000 || n < -10000 {
					return undef
				}
				n *= 12
			}
			r, ok := addMonths(t, n)
			if !ok {
				return undef
			}
			return dateValue(r)
		case partNanosecond:
			n /= 100
		default:
			unit := partTicks[part]
			if n > 1<<62/unit || n < -(1<<62)/unit {
				return undef
			}
			n *= unit
		}
		ticks := ticksOf(t)
		if (n > 0 && ticks > 1<<62-n) || (n < 0 && ticks < -(1<<62)-n) {
			return undef
		}
		return dateValue(fromTicks(ticks + n))
	}, "DateTimeAdd")

	pure(2, 2, func(a []document.Value) document.Value {
		part, ok1 := partArg(a[0])
		t, ok2 := parseDateTime(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		frac := int64(t.Nanosecond() / 100)
		var r int64
		switch part {
		case partYear:
			r = int64(t.Year())
		case partMonth:
			r = int64(t.Month())
		case partDay:
			r = int64(t.Day())
		case partHour:
			r = int64(t.Hour())
		case partMinute:
			r = int64(t.Minute())
		case partSecond:
			r = int64(t.Second())
		case partMillisecond:
			r = frac / 10_000
		case partMicrosecond:
			r = frac / 10
		case partNanosecond:
			r = frac * 100
		}
		return document.Int(r)
	}, "DateTimePart")

	pure(3, 3, func(a []document.Value) document.Value {
		part, ok1 := partArg(a[0])
		s, ok2 := parseDateTime(a[1])
		e, ok3 := parseDateTime(a[2])
		if !ok1 || !ok2 || !ok3 {
			return undef
		}
		switch part {
		case partYear:
			return document.Int(int64(e.Year() - s.Year()))
		case partMonth:
			return document.Int(int64((e.Year()-s.Year())*12 + int(e.Month()) - int(s.Month())))
		case partNanosecond:
			// Past about 292 years the nanoseconds pass the int64 range:
			// they are then a float, not a wrapped integer.
			d := ticksOf(e) - ticksOf(s)
			if d > math.MaxInt64/100 || d < math.MinInt64/100 {
				return document.Float(float64(d) * 100)
			}
			return document.Int(d * 100)
		}
		unit := partTicks[part]
		return document.Int(floorDiv(ticksOf(e), unit) - floorDiv(ticksOf(s), unit))
	}, "DateTimeDiff")

	pure(2, 4, func(a []document.Value) document.Value {
		t, ok1 := parseDateTime(a[0])
		part, ok2 := partArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		size := int64(1)
		if len(a) > 2 {
			n, ok := intArg(a[2])
			if !ok || n <= 0 || float64(n) != a[2].Float() {
				return undef
			}
			size = n
		}
		origin := time.Unix(0, 0).UTC()
		if len(a) > 3 {
			o, ok := parseDateTime(a[3])
			if !ok {
				return undef
			}
			origin = o
		}
		// Undefined, as the service's reference says, for a part coarser
		// than days, for either date before the year 1601, and for
		// nanoseconds in bins of less than 100 (a tick).
		if t.Year() < 1601 || origin.Year() < 1601 {
			return undef
		}
		switch part {
		case partYear, partMonth:
			return undef
		case partNanosecond:
			if size < 100 {
				return undef
			}
			size = (size + 99) / 100
		default:
			// A bin longer than binMax ticks holds every date from the
			// origin on, as binMax does: the product is kept from
			// overflowing, which made the bin wrap to another size or to
			// zero.
			if unit := partTicks[part]; size > binMax/unit {
				size = binMax
			} else {
				size *= unit
			}
		}
		o := ticksOf(origin)
		return dateValue(fromTicks(o + floorDiv(ticksOf(t)-o, size)*size))
	}, "DateTimeBin")

	pure(3, 7, func(a []document.Value) document.Value {
		var p [7]int64
		for i, v := range a {
			n, ok := intArg(v)
			if !ok || float64(n) != v.Float() {
				return undef
			}
			p[i] = n
		}
		if p[0] < 1 || p[0] > 9999 || p[1] < 1 || p[1] > 12 || p[2] < 1 || p[3] < 0 || p[3] > 23 ||
			p[4] < 0 || p[4] > 59 || p[5] < 0 || p[5] > 59 || p[6] < 0 || p[6] >= ticksPerSecond {
			return undef
		}
		t := time.Date(int(p[0]), time.Month(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6])*100, time.UTC)
		if t.Day() != int(p[2]) {
			return undef
		}
		return dateValue(t)
	}, "DateTimeFromParts")

	pure(1, 1, func(a []document.Value) document.Value {
		t, ok := parseDateTime(a[0])
		if !ok {
			return undef
		}
		return document.Int(ticksOf(t))
	}, "DateTimeToTicks")
	pure(1, 1, func(a []document.Value) document.Value {
		t, ok := parseDateTime(a[0])
		if !ok {
			return undef
		}
		return document.Int(floorDiv(ticksOf(t), 10_000))
	}, "DateTimeToTimestamp")
	pure(1, 1, func(a []document.Value) document.Value {
		n, ok := intArg(a[0])
		if !ok || n > 1<<58 || n < -(1<<58) {
			return undef
		}
		return dateValue(fromTicks(n))
	}, "TicksToDateTime")
	pure(1, 1, func(a []document.Value) document.Value {
		n, ok := intArg(a[0])
		if !ok || n > 1<<50 || n < -(1<<50) {
			return undef
		}
		return dateValue(fromTicks(n * 10_000))
	}, "TimestampToDateTime")
}
