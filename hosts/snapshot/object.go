package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// sum is an object's name: the SHA-256 of its bytes (a file's content, a tree's or a
// snapshot record's encoding).
type sum [sha256.Size]byte

func (h sum) String() string { return hex.EncodeToString(h[:]) }

func parseSum(s string) (sum, bool) {
	var h sum
	if len(s) != 2*len(h) {
		return h, false
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err == nil
}

// Object types, as the packs record them.
const (
	objBlob byte = 'b'
	objTree byte = 't'
	objSnap byte = 's'
)

// kind is the type of a tree entry.
type kind uint8

const (
	kFile   kind = 'f' // a regular file whose content is stored
	kBig    kind = 'n' // a regular file recorded by size and mtime, its content not stored
	kLink   kind = 'l' // a symbolic link
	kDir    kind = 'd' // a directory
	kOpaque kind = 'u' // a directory that could not be read: what is inside is unknown
)

// entry is one name in a tree: what a snapshot knows of a file.
type entry struct {
	name   string
	kind   kind
	perm   uint32 // permission bits of a file (kFile, kBig)
	size   int64  // kFile, kBig
	mtime  int64  // kBig only, in ns: how a change of a file not stored is seen
	hash   sum    // kFile: the blob; kDir: the tree
	target string // kLink
}

// same reports whether two entries record the same state (names aside).
func (e *entry) same(o *entry) bool {
	return e.kind == o.kind && e.perm == o.perm && e.size == o.size && e.mtime == o.mtime &&
		e.hash == o.hash && e.target == o.target
}

func (e *entry) isDir() bool { return e != nil && (e.kind == kDir || e.kind == kOpaque) }

// public returns the entry as the API shows it.
func (e *entry) public() *Entry {
	out := &Entry{Size: e.size}
	switch e.kind {
	case kFile:
		out.Type, out.Mode, out.SHA256 = TypeFile, fs.FileMode(e.perm), e.hash.String()
	case kBig:
		out.Type, out.Mode, out.NotStored = TypeFile, fs.FileMode(e.perm), true
	case kLink:
		out.Type, out.Target = TypeSymlink, e.target
	case kDir:
		out.Type = TypeDir
	case kOpaque:
		out.Type, out.NotStored = TypeDir, true
	}
	return out
}

// Type is the type of a file in a snapshot.
type Type string

// The types of files a snapshot records. Other files (named pipes, sockets, devices) are
// left out.
const (
	TypeFile    Type = "file"
	TypeSymlink Type = "symlink"
	TypeDir     Type = "dir"
)

// Entry is what a snapshot recorded of one file.
type Entry struct {
	Type Type `json:"type"`
	// Mode holds a file's permission bits (0o755); 0 for a symlink or a directory.
	Mode fs.FileMode `json:"mode,omitempty"`
	Size int64       `json:"size,omitempty"`
	// SHA256 is the hex SHA-256 of a stored file's content.
	SHA256 string `json:"sha256,omitempty"`
	// Target is a symlink's target, as the link holds it (for display: a restore takes it
	// from the store, byte for byte).
	Target string `json:"target,omitempty"`
	// NotStored: a file over the size cap (or one that could not be read) whose content
	// was not kept, or a directory that could not be read.
	NotStored bool `json:"not_stored,omitempty"`
}

// The encoding of trees and snapshot records: deterministic, so that the same state has
// the same hash. Names are length-prefixed bytes, so any byte may be in them.

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) sum(h sum)        { e.b = append(e.b, h[:]...) }
func (e *encoder) byte1(c byte)     { e.b = append(e.b, c) }

func encodeBody(e *encoder, n *entry) {
	e.byte1(byte(n.kind))
	switch n.kind {
	case kFile:
		e.uvarint(uint64(n.perm))
		e.uvarint(uint64(n.size))
		e.sum(n.hash)
	case kBig:
		e.uvarint(uint64(n.perm))
		e.uvarint(uint64(n.size))
		e.varint(n.mtime)
	case kLink:
		e.str(n.target)
	case kDir:
		e.sum(n.hash)
	}
}

var errCorrupt = errors.New("snapshot: corrupt object")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) sum() sum {
	var h sum
	if len(d.b) < len(h) {
		d.fail()
		return h
	}
	copy(h[:], d.b)
	d.b = d.b[len(h):]
	return h
}

func (d *decoder) byte1() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) entryBody(n *entry) {
	n.kind = kind(d.byte1())
	switch n.kind {
	case kFile:
		n.perm = uint32(d.uvarint())
		n.size = int64(d.uvarint())
		n.hash = d.sum()
	case kBig:
		n.perm = uint32(d.uvarint())
		n.size = int64(d.uvarint())
		n.mtime = d.varint()
	case kLink:
		n.target = d.str()
	case kDir:
		n.hash = d.sum()
	case kOpaque:
	default:
		d.fail()
	}
}

const treeMagic = "T1"

// encodeTree encodes a directory's entries, which must be sorted by name.
func encodeTree(ents []entry) []byte {
	e := encoder{b: make([]byte, 0, 2+len(ents)*48)}
	e.b = append(e.b, treeMagic...)
	e.uvarint(uint64(len(ents)))
	for i := range ents {
		e.str(ents[i].name)
		encodeBody(&e, &ents[i])
	}
	return e.b
}

func decodeTree(b []byte) ([]entry, error) {
	if !strings.HasPrefix(string(b), treeMagic) {
		return nil, errCorrupt
	}
	d := decoder{b: b[len(treeMagic):]}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		return nil, errCorrupt
	}
	ents := make([]entry, n)
	for i := range ents {
		ents[i].name = d.str()
		d.entryBody(&ents[i])
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return ents, nil
}

// emptyTree is the hash of a directory with nothing in it.
var emptyTree = sha256.Sum256(encodeTree(nil))

// record is a snapshot: the tree of a directory, the rules that chose what was in it, and
// the files captured one by one.
type record struct {
	dir         string   // absolute
	tree        sum      // the directory's tree
	noGitignore bool     // .gitignore files were not applied
	exclude     []string // extra patterns, applied at dir
	rules       []rule   // the .gitignore files applied
	files       []extra  // files captured one by one, by path
	// Totals of the tree and the files, for the caller's display.
	count, notStored int
	bytes            int64
}

// rule is one .gitignore file that a capture applied.
type rule struct {
	base string // its directory: relative to the snapshot's directory, or absolute (above it)
	blob sum
}

// extra is a file captured one by one: absolute (outside the directory) or relative (an
// ignored file inside it). An absent file is recorded as absent.
type extra struct {
	path    string
	present bool
	e       entry
}

const recordMagic = "S1"

func (r *record) encode() []byte {
	e := encoder{}
	e.b = append(e.b, recordMagic...)
	e.str(r.dir)
	e.sum(r.tree)
	flags := uint64(0)
	if r.noGitignore {
		flags |= 1
	}
	e.uvarint(flags)
	e.uvarint(uint64(len(r.exclude)))
	for _, x := range r.exclude {
		e.str(x)
	}
	e.uvarint(uint64(len(r.rules)))
	for _, x := range r.rules {
		e.str(x.base)
		e.sum(x.blob)
	}
	e.uvarint(uint64(len(r.files)))
	for i := range r.files {
		x := &r.files[i]
		e.str(x.path)
		if x.present {
			e.byte1(1)
			encodeBody(&e, &x.e)
		} else {
			e.byte1(0)
		}
	}
	e.uvarint(uint64(r.count))
	e.uvarint(uint64(r.notStored))
	e.uvarint(uint64(r.bytes))
	return e.b
}

func decodeRecord(b []byte) (*record, error) {
	if !strings.HasPrefix(string(b), recordMagic) {
		return nil, errCorrupt
	}
	d := decoder{b: b[len(recordMagic):]}
	r := &record{dir: d.str(), tree: d.sum()}
	r.noGitignore = d.uvarint()&1 != 0
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		r.exclude = append(r.exclude, d.str())
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		r.rules = append(r.rules, rule{base: d.str(), blob: d.sum()})
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		x := extra{path: d.str()}
		x.present = d.byte1() == 1
		if x.present {
			d.entryBody(&x.e)
		}
		r.files = append(r.files, x)
	}
	r.count = int(d.uvarint())
	r.notStored = int(d.uvarint())
	r.bytes = int64(d.uvarint())
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return r, nil
}

// ID names a snapshot: 64 hex digits, the SHA-256 of its record. The same state of the
// same directory captured twice has the same ID, and an ID stays valid across restarts
// for as long as the snapshot is kept ([Store.Prune]).
type ID string

func (id ID) sum() (sum, error) {
	h, ok := parseSum(string(id))
	if !ok {
		return h, fmt.Errorf("snapshot id %q: %w", string(id), ErrNotFound)
	}
	return h, nil
}

func sortEntries(ents []entry) {
	slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
}
