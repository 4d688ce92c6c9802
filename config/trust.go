package config

import (
	"errors"
	"fmt"
	"io/fs"
	"myco.dev/internal/shquote"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// What myco trusts on disk: a directory or file it reads its config from, or the .env
// it reads credentials from, must be one that no other user could have written, as
// OpenSSH requires of ~/.ssh. Its owner is this user or root, and group and others may
// not write to it. A symlink is followed (the target is what is read), and the symlink
// itself must be this user's or root's, since its owner can repoint it at any time.

// untrusted says why another user could have written the file or directory info
// describes ("it belongs to another user", "group or others may write to it"), or ""
// when only uid or root could have.
func untrusted(info fs.FileInfo, uid int) string {
	var why []string
	if owner, ok := ownerOf(info); ok && owner != uid && owner != 0 {
		why = append(why, "it belongs to another user")
	}
	if info.Mode().Perm()&0o022 != 0 {
		why = append(why, "group or others may write to it")
	}
	return strings.Join(why, " and ")
}

// describe says who owns info and its mode: "(owner alice (uid 1000), mode drwxr-xr-x)".
func describe(info fs.FileInfo) string {
	s := "mode " + info.Mode().String()
	if owner, ok := ownerOf(info); ok {
		s = "owner " + Who(owner) + ", " + s
	}
	return "(" + s + ")"
}

// fixFor returns the command that makes path trusted for uid: a chown when another user
// owns it, a chmod when group or others may write to it, both when both apply. For a
// symlink (link) the chown is of the link itself.
func fixFor(path string, info fs.FileInfo, uid int, link bool) string {
	var cmds []string
	if owner, ok := ownerOf(info); ok && owner != uid && owner != 0 {
		h := ""
		if link {
			h = "-h "
		}
		cmds = append(cmds, "sudo chown "+h+userArg(uid)+" "+shquote.Quote(path))
	}
	if !link && info.Mode().Perm()&0o022 != 0 {
		cmds = append(cmds, "chmod go-w "+shquote.Quote(path))
	}
	return "if it is yours, run: " + strings.Join(cmds, " && ")
}

// checkDir returns an error when the directory at path exists and another user could
// have written it or, through a symlink of theirs, chosen it. A missing directory is
// not an error: myco creates it private ([Paths.Ensure]). what names the directory in
// the error ("profile directory").
func checkDir(what, path string, uid int) error {
	linfo, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check the %s: %w", what, err)
	}
	if err := checkLink(what, path, linfo, uid); err != nil {
		return err
	}
	info := linfo
	if linfo.Mode()&fs.ModeSymlink != 0 {
		if info, err = os.Stat(path); err != nil {
			return fmt.Errorf("check the %s: %w", what, err)
		}
	}
	if !info.IsDir() {
		return fmt.Errorf("the %s %s is not a directory %s", what, path, describe(info))
	}
	if why := untrusted(info, uid); why != "" {
		return fmt.Errorf("refusing the %s %s %s: %s, so another user could make myco read their config and send them your credentials; use a directory of your own, or %s",
			what, path, describe(info), why, fixFor(path, info, uid, false))
	}
	return nil
}

// checkLink refuses a symlink at path (linfo from Lstat) owned by another user.
func checkLink(what, path string, linfo fs.FileInfo, uid int) error {
	if linfo.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if owner, ok := ownerOf(linfo); ok && owner != uid && owner != 0 {
		return fmt.Errorf("refusing the %s %s: it is a symlink owned by %s, not by you or root, who can point it elsewhere at any time; remove it, or %s",
			what, path, Who(owner), fixFor(path, linfo, uid, true))
	}
	return nil
}

// checkFile returns an error when another user could have written the opened file f
// (checked on the descriptor, so it is the file that is read) or the symlink at path
// that led to it.
func checkFile(what, path string, f *os.File, uid int) (fs.FileInfo, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("check the %s: %w", what, err)
	}
	if linfo, err := os.Lstat(path); err == nil {
		if err := checkLink(what, path, linfo, uid); err != nil {
			return nil, err
		}
	}
	if why := untrusted(info, uid); why != "" {
		return nil, fmt.Errorf("refusing the %s %s %s: %s, so another user could choose where myco sends your credentials; %s",
			what, path, describe(info), why, fixFor(path, info, uid, false))
	}
	return info, nil
}

func ownerOf(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// Who names a user for a message: "alice (uid 1000)", or "uid 1000" when the name is
// unknown. Names are looked up only when a message is built, so the checks themselves
// read no user database.
func Who(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username + " (uid " + strconv.Itoa(uid) + ")"
	}
	return "uid " + strconv.Itoa(uid)
}

// userArg is the user to give to chown: the name when it is known, else the uid.
func userArg(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return shquote.Quote(u.Username)
	}
	return strconv.Itoa(uid)
}
