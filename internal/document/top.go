package document

// ParseTop decodes a JSON object keeping only the top-level properties
// named in keep: the others are stepped over without being decoded, which
// for a query that reads one property of a stored item is most of the work
// of Parse saved (its strings are not copied, its numbers not converted).
//
// It is for stored items, which were validated when written: what it steps
// over it does not check. Duplicate keys keep the last value, as in Parse.
// It has an object loop of its own rather than Parse's because it looks a
// name up as the bytes between its quotes when they hold no escape:
// decoding every name into a string, as Parse does, made a range query a
// sixth slower (BenchmarkPartitionRangeQuery, alternated), and moving even
// the ':' and separator steps of both loops into shared calls made Parse,
// on every write's path, 3-5% slower (BenchmarkParse, alternated).
func ParseTop(data []byte, keep map[string]bool) (Value, error) {
	st := stackPool.Get().(*stacks)
	defer st.release()
	p := parser{data: data, stacks: st}
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return Parse(data)
	}
	p.pos++
	var out []Field
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		return Obj(nil), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Undef, p.fail("expected a property name")
		}
		nameAt := p.pos
		raw, plain := p.rawString()
		var name string
		if plain {
			if !keep[string(raw)] {
				p.skipSpace()
				p.pos++ // ':'
				p.skipSpace()
				if err := p.skip(); err != nil {
					return Undef, err
				}
				if done, err := p.next(); done || err != nil {
					return Obj(out), err
				}
				continue
			}
			name = string(raw)
		} else {
			p.pos = nameAt
			var err error
			if name, err = p.str(); err != nil {
				return Undef, err
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Undef, p.fail("expected ':' after a property name")
		}
		p.pos++
		p.skipSpace()
		if !keep[name] {
			if err := p.skip(); err != nil {
				return Undef, err
			}
		} else {
			v, err := p.value(1)
			if err != nil {
				return Undef, err
			}
			replaced := false
			for i := range out {
				if out[i].Name == name {
					out[i].Value, replaced = v, true
				}
			}
			if !replaced {
				out = append(out, Field{Name: name, Value: v})
			}
		}
		if done, err := p.next(); done || err != nil {
			return Obj(out), err
		}
	}
}

// next consumes the separator after a property: done at the closing '}'.
func (p *parser) next() (done bool, err error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return true, p.fail("unexpected end of input in an object")
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case '}':
		p.pos++
		return true, nil
	}
	return true, p.fail("expected ',' or '}' in an object")
}

// rawString steps over the string at p.pos and returns its bytes between
// the quotes, and whether they hold no escape (so are the string itself).
func (p *parser) rawString() ([]byte, bool) {
	start := p.pos + 1
	plain := true
	for i := start; i < len(p.data); i++ {
		switch p.data[i] {
		case '\\':
			plain = false
			i++
		case '"':
			p.pos = i + 1
			return p.data[start:i], plain
		}
	}
	p.pos = len(p.data)
	return nil, false
}

// skip steps over one value without decoding it.
func (p *parser) skip() error {
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of input")
	}
	switch p.data[p.pos] {
	case '"':
		p.rawString()
		return nil
	case '{', '[':
		depth := 0
		for p.pos < len(p.data) {
			switch p.data[p.pos] {
			case '"':
				p.rawString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.pos++
					return nil
				}
			}
			p.pos++
		}
		return p.fail("unexpected end of input")
	}
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		p.pos++
	}
	return nil
}
