package snapshot

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A pack is one immutable file of objects: every object a capture added, or the live
// objects that a prune copied together. Its layout:
//
//	"MYCOPAK1"
//	objects: the stored bytes of each, one after another
//	index: per object its hash, type, flags, offset, stored and raw lengths
//	footer: index offset (uint64), count (uint32), CRC-32C of the index (uint32), "MYCOPAK1"
//
// One file and one fsync per capture instead of one per object: a capture that changed ten
// files writes one pack, not a dozen loose files.
const packMagic = "MYCOPAK1"

const footerLen = 8 + 4 + 4 + len(packMagic)

// Object flags.
const flagDeflate byte = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pack is an open pack file.
type pack struct {
	name string // base name in packs/
	path string
	size int64

	once sync.Once
	f    *os.File // opened for reading on first use; closed by Store.Close or a prune
	ferr error
}

func (p *pack) file() (*os.File, error) {
	p.once.Do(func() { p.f, p.ferr = os.Open(p.path) })
	return p.f, p.ferr
}

func (p *pack) close() {
	p.once.Do(func() {})
	if p.f != nil {
		p.f.Close()
	}
}

// loc is where an object is.
type loc struct {
	p      *pack
	off    int64
	stored uint32
	raw    uint32
	typ    byte
	flags  byte
}

// readPackIndex reads a pack's index.
func readPackIndex(path string) (*pack, []sum, []loc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	size := info.Size()
	if size < int64(len(packMagic)+footerLen) {
		return nil, nil, nil, errCorrupt
	}
	foot := make([]byte, footerLen)
	if _, err := f.ReadAt(foot, size-int64(footerLen)); err != nil {
		return nil, nil, nil, err
	}
	if string(foot[16:]) != packMagic {
		return nil, nil, nil, errCorrupt
	}
	ioff := int64(binary.LittleEndian.Uint64(foot))
	count := binary.LittleEndian.Uint32(foot[8:])
	crc := binary.LittleEndian.Uint32(foot[12:])
	if ioff < int64(len(packMagic)) || ioff > size-int64(footerLen) {
		return nil, nil, nil, errCorrupt
	}
	idx := make([]byte, size-int64(footerLen)-ioff)
	if _, err := f.ReadAt(idx, ioff); err != nil {
		return nil, nil, nil, err
	}
	if crc32.Checksum(idx, castagnoli) != crc || uint64(count) > uint64(len(idx))/36 {
		return nil, nil, nil, errCorrupt
	}
	p := &pack{name: filepath.Base(path), path: path, size: size}
	sums := make([]sum, count)
	locs := make([]loc, count)
	d := decoder{b: idx}
	for i := range sums {
		sums[i] = d.sum()
		l := loc{p: p, typ: d.byte1(), flags: d.byte1()}
		l.off = int64(d.uvarint())
		l.stored = uint32(d.uvarint())
		l.raw = uint32(d.uvarint())
		if l.off+int64(l.stored) > ioff {
			d.fail()
		}
		locs[i] = l
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, nil, nil, errCorrupt
	}
	return p, sums, locs, nil
}

// read returns the object's raw bytes, checked against its hash.
func (l loc) read(h sum) ([]byte, error) {
	f, err := l.p.file()
	if err != nil {
		return nil, err
	}
	stored := make([]byte, l.stored)
	if _, err := f.ReadAt(stored, l.off); err != nil {
		return nil, fmt.Errorf("read object %s from %s: %w", h, l.p.name, err)
	}
	raw := stored
	if l.flags&flagDeflate != 0 {
		raw = make([]byte, l.raw)
		if err := inflate(raw, stored); err != nil {
			return nil, fmt.Errorf("inflate object %s from %s: %w", h, l.p.name, errCorrupt)
		}
	}
	if sha256.Sum256(raw) != h {
		return nil, fmt.Errorf("object %s in %s: %w", h, l.p.name, errCorrupt)
	}
	return raw, nil
}

// inflaters keeps flate readers, whose tables cost more to allocate than a tree takes to
// inflate.
var inflaters sync.Pool

// inflate fills raw from the deflated stored.
func inflate(raw, stored []byte) error {
	br := bytes.NewReader(stored)
	zr, _ := inflaters.Get().(io.ReadCloser)
	if zr == nil {
		zr = flate.NewReader(br)
	} else if err := zr.(flate.Resetter).Reset(br, nil); err != nil {
		return err
	}
	defer inflaters.Put(zr)
	_, err := io.ReadFull(zr, raw)
	return err
}

// packWriter builds a new pack from the objects one operation adds. Safe for concurrent
// use: the walk's goroutines add to one writer.
type packWriter struct {
	dir string // packs/

	mu      sync.Mutex // guards the fields below
	f       *os.File   // the temporary file, created on the first object
	w       *bufio.Writer
	off     int64
	objs    []packObj
	pending map[sum]bool
	written int64 // stored bytes
}

type packObj struct {
	h      sum
	typ    byte
	flags  byte
	off    int64
	stored uint32
	raw    uint32
}

func newPackWriter(dir string) *packWriter {
	return &packWriter{dir: dir, pending: map[sum]bool{}}
}

var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// compress returns data deflated, or nil when deflating does not pay: a sample of the
// first 8 KiB that does not shrink by a tenth (random or compressed data) is not worth the
// rest.
func compress(data []byte) []byte {
	if len(data) < 128 {
		return nil
	}
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	var buf bytes.Buffer
	if len(data) > 16<<10 {
		w.Reset(&buf)
		w.Write(data[:8<<10])
		w.Close()
		if buf.Len() > 8<<10*9/10 {
			return nil
		}
		buf.Reset()
	}
	w.Reset(&buf)
	w.Write(data)
	w.Close()
	if buf.Len() > len(data)*9/10 {
		return nil
	}
	return buf.Bytes()
}

// has reports whether the writer already holds h.
func (w *packWriter) has(h sum) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending[h]
}

// add appends an object, unless the writer holds it already. Trees are stored as they are:
// they are mostly hashes, which do not compress, and a diff reads many of them.
func (w *packWriter) add(typ byte, h sum, raw []byte) error {
	if w.has(h) {
		return nil
	}
	var stored []byte
	flags := flagDeflate
	if typ != objTree {
		stored = compress(raw)
	}
	if stored == nil {
		stored, flags = raw, 0
	}
	return w.addStored(typ, h, flags, stored, uint32(len(raw)))
}

func (w *packWriter) addStored(typ byte, h sum, flags byte, stored []byte, raw uint32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[h] {
		return nil
	}
	if w.f == nil {
		f, err := os.CreateTemp(w.dir, ".tmp-*.pack")
		if err != nil {
			return fmt.Errorf("create a pack: %w", err)
		}
		w.f, w.w = f, bufio.NewWriterSize(f, 256<<10)
		w.w.WriteString(packMagic)
		w.off = int64(len(packMagic))
	}
	if _, err := w.w.Write(stored); err != nil {
		return fmt.Errorf("write a pack: %w", err)
	}
	w.objs = append(w.objs, packObj{h: h, typ: typ, flags: flags, off: w.off, stored: uint32(len(stored)), raw: raw})
	w.off += int64(len(stored))
	w.written += int64(len(stored))
	w.pending[h] = true
	return nil
}

// finish writes the index and the footer, syncs the pack and renames it into place. It
// returns nil when no object was added. The writer is done either way.
func (w *packWriter) finish() (*pack, []sum, []loc, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil, nil, nil, nil
	}
	tmp := w.f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	e := encoder{}
	for _, o := range w.objs {
		e.sum(o.h)
		e.byte1(o.typ)
		e.byte1(o.flags)
		e.uvarint(uint64(o.off))
		e.uvarint(uint64(o.stored))
		e.uvarint(uint64(o.raw))
	}
	foot := make([]byte, footerLen)
	binary.LittleEndian.PutUint64(foot, uint64(w.off))
	binary.LittleEndian.PutUint32(foot[8:], uint32(len(w.objs)))
	binary.LittleEndian.PutUint32(foot[12:], crc32.Checksum(e.b, castagnoli))
	copy(foot[16:], packMagic)
	w.w.Write(e.b)
	w.w.Write(foot)
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return nil, nil, nil, fmt.Errorf("write a pack: %w", err)
	}
	name := packName()
	final := filepath.Join(w.dir, name)
	if err := os.Rename(tmp, final); err != nil {
		return nil, nil, nil, fmt.Errorf("write a pack: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		return nil, nil, nil, fmt.Errorf("write a pack: %w", err)
	}
	p := &pack{name: name, path: final, size: w.off + int64(len(e.b)+footerLen)}
	sums := make([]sum, len(w.objs))
	locs := make([]loc, len(w.objs))
	for i, o := range w.objs {
		sums[i] = o.h
		locs[i] = loc{p: p, off: o.off, stored: o.stored, raw: o.raw, typ: o.typ, flags: o.flags}
	}
	return p, sums, locs, nil
}

// abort drops what the writer holds.
func (w *packWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		os.Remove(w.f.Name())
		w.f = nil
	}
}

// packName names a new pack: the time first, so names sort by age, and random bits.
func packName() string {
	var r [6]byte
	rand.Read(r[:])
	return time.Now().UTC().Format("20060102T150405.000000000") + "-" + hex.EncodeToString(r[:]) + ".pack"
}

func isPackName(name string) bool {
	return strings.HasSuffix(name, ".pack") && !strings.HasPrefix(name, ".")
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var errMissing = errors.New("snapshot: object missing")
