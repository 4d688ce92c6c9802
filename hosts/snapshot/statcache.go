package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The stat cache: what the last capture of a directory saw of each file (device, inode,
// size, mtime and ctime, in ns) and the hash it found, so that the next capture hashes only
// the files whose stat changed, and reuses the tree of every directory whose entries did
// not. It is a hint: a cache that is missing, damaged or older than the store's contents
// costs a full hash, never a wrong snapshot.
//
// It describes the tree of one snapshot (id), so all the objects it names are kept for as
// long as that snapshot is: a cache whose snapshot was pruned is dropped.

// racyWindow: a file whose ctime is this close to the start of the capture that hashed it
// could change again within the same tick of the file system's clock without its stat
// changing (git's "racy clean" entries), so the next capture hashes it again. Two seconds
// covers a coarse clock and a file server's skew.
const racyWindow = 2 * time.Second

type cacheEnt struct {
	entry
	dev, ino         uint64
	mtimeNs, ctimeNs int64
	statSize         int64
	racy             bool
}

// dirCache is one directory's entries, sorted by name, and its tree. Immutable once built.
type dirCache struct {
	tree sum
	ents []cacheEnt
}

// rootCache is the cache of one captured directory.
type rootCache struct {
	id   ID
	dirs map[string]*dirCache // by path relative to the directory; "" is the directory
}

func cacheFile(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(h[:16])
}

const cacheMagic = "C1"

func (c *rootCache) encode(dir string) []byte {
	e := encoder{}
	e.b = append(e.b, cacheMagic...)
	e.str(dir)
	e.str(string(c.id))
	e.uvarint(uint64(len(c.dirs)))
	for rel, d := range c.dirs {
		e.str(rel)
		e.sum(d.tree)
		e.uvarint(uint64(len(d.ents)))
		for i := range d.ents {
			x := &d.ents[i]
			e.str(x.name)
			encodeBody(&e, &x.entry)
			e.uvarint(x.dev)
			e.uvarint(x.ino)
			e.varint(x.mtimeNs)
			e.varint(x.ctimeNs)
			e.varint(x.statSize)
			if x.racy {
				e.byte1(1)
			} else {
				e.byte1(0)
			}
		}
	}
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

func decodeCache(b []byte, dir string) (*rootCache, error) {
	if len(b) < 4 || len(b) < len(cacheMagic) || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errCorrupt
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errCorrupt
	}
	d := decoder{b: body[len(cacheMagic):]}
	if d.str() != dir {
		return nil, errCorrupt
	}
	c := &rootCache{id: ID(d.str()), dirs: map[string]*dirCache{}}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		rel := d.str()
		dc := &dirCache{tree: d.sum()}
		m := d.uvarint()
		if m > uint64(len(d.b)) {
			return nil, errCorrupt
		}
		dc.ents = make([]cacheEnt, m)
		for i := range dc.ents {
			x := &dc.ents[i]
			x.name = d.str()
			d.entryBody(&x.entry)
			x.dev = d.uvarint()
			x.ino = d.uvarint()
			x.mtimeNs = d.varint()
			x.ctimeNs = d.varint()
			x.statSize = d.varint()
			x.racy = d.byte1() == 1
		}
		c.dirs[rel] = dc
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return c, nil
}

// loadCache returns the cache of dir, from memory or disk, if the snapshot it describes is
// still in the store; else nil.
func (s *Store) loadCache(dir string) *rootCache {
	s.mu.Lock()
	c := s.caches[dir]
	s.mu.Unlock()
	if c == nil {
		b, err := os.ReadFile(filepath.Join(s.sub("cache"), cacheFile(dir)))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("snapshot stat cache unreadable", "dir", dir, "err", err)
			}
			return nil
		}
		if c, err = decodeCache(b, dir); err != nil {
			return nil
		}
	}
	h, err := c.id.sum()
	if err != nil || !s.has(h) {
		return nil
	}
	return c
}

// saveCache keeps c as dir's cache, in memory and on disk. The file is not synced: after a
// crash an older or missing cache only costs hashing.
func (s *Store) saveCache(dir string, c *rootCache, changed bool) error {
	s.mu.Lock()
	s.caches[dir] = c
	s.mu.Unlock()
	if !changed {
		return nil
	}
	path := filepath.Join(s.sub("cache"), cacheFile(dir))
	f, err := os.CreateTemp(s.sub("cache"), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(c.encode(dir))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
