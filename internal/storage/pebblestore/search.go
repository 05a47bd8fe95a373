package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/golang/snappy"
)

// SearchFiles looks for each needle in every file under dir and returns,
// per needle found, the files holding it. It is how erasure is checked
// (ttl.md B4): a byte string is gone only if no file holds it in any form
// the store could read back. So besides every file's raw bytes it reads
// every table the way Pebble would: each block decompressed, and each key
// and value whole (a data block shares key prefixes between neighbours, so
// a key is not contiguous in it), shadowed and deleted versions included.
// It opens tables read-only and may run beside a store that is open.
func SearchFiles(dir string, needles [][]byte) (map[string][]string, error) {
	found := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while walking
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		var hits map[string]bool
		hits, err = searchFile(path, needles)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("search %s: %w", path, err)
		}
		for n := range hits {
			found[n] = append(found[n], path)
		}
		return nil
	})
	return found, err
}

// searchFile returns the needles the file at path holds.
func searchFile(path string, needles [][]byte) (map[string]bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	hits := map[string]bool{}
	look := func(b []byte) {
		for _, n := range needles {
			if !hits[string(n)] && bytes.Contains(b, n) {
				hits[string(n)] = true
			}
		}
	}
	look(raw)
	if strings.HasSuffix(path, ".sst") {
		if err := searchTable(path, raw, look); err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// searchTable passes look every decompressed block of the table at path,
// whose bytes are raw, then every key and value in it.
func searchTable(path string, raw []byte, look func([]byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	r, err := sstable.NewReader(&fileReadable{f: f, size: int64(len(raw))}, sstable.ReaderOptions{MergerName: pebble.DefaultMerger.Name})
	if err != nil {
		return err // NewReader closed the file
	}
	defer r.Close()
	layout, err := r.Layout()
	if err != nil {
		return err
	}
	handles := []sstable.BlockHandle{layout.TopIndex, layout.Filter, layout.RangeDel, layout.RangeKey,
		layout.ValueIndex, layout.Properties, layout.MetaIndex}
	for _, h := range layout.Data {
		handles = append(handles, h.BlockHandle)
	}
	handles = append(handles, layout.Index...)
	handles = append(handles, layout.ValueBlock...)
	for _, h := range handles {
		if h.Length == 0 {
			continue
		}
		b, err := blockContents(raw, h)
		if err != nil {
			return err
		}
		look(b)
	}
	it, err := r.NewIter(nil, nil)
	if err != nil {
		return err
	}
	for k, v := it.First(); k != nil; k, v = it.Next() {
		look(k.UserKey)
		val, _, err := v.Value(nil)
		if err != nil {
			_ = it.Close()
			return err
		}
		look(val)
	}
	if err := it.Close(); err != nil {
		return err
	}
	rd, err := r.NewRawRangeDelIter()
	if err != nil || rd == nil {
		return err
	}
	defer rd.Close()
	for s := rd.First(); s != nil; s = rd.Next() {
		look(s.Start)
		look(s.End)
	}
	return rd.Error()
}

// blockContents is the block at h, decompressed. A block is followed by a
// one-byte compression type and a four-byte checksum.
func blockContents(raw []byte, h sstable.BlockHandle) ([]byte, error) {
	end := h.Offset + h.Length
	if end+1 > uint64(len(raw)) {
		return nil, fmt.Errorf("block at %d overruns the table", h.Offset)
	}
	b := raw[h.Offset:end]
	switch raw[end] {
	case 0: // none
		return b, nil
	case 1: // Snappy
		return snappy.Decode(nil, b)
	default:
		return nil, fmt.Errorf("block at %d: compression type %d is not read here", h.Offset, raw[end])
	}
}
