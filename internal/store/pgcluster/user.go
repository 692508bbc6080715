package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser is the operating-system user the PostgreSQL server runs as: the current user, or,
// when the process is root (PostgreSQL refuses to run as root), Debian's unprivileged `postgres`.
type serverUser struct {
	name     string
	uid, gid int
	groups   []int
	homeDir  string
	switchTo bool // exec initdb and postgres with this user's credentials
}

// serverUserName is the account Debian's postgresql package creates.
const serverUserName = "postgres"

func lookupServerUser() (*serverUser, error) {
	if os.Geteuid() != 0 {
		groups, _ := os.Getgroups()
		name := strconv.Itoa(os.Geteuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		return &serverUser{name: name, uid: os.Geteuid(), gid: os.Getegid(), groups: groups, homeDir: os.Getenv("HOME")}, nil
	}
	u, err := user.Lookup(serverUserName)
	if err != nil {
		return nil, &clusterError{kind: ErrPermission, cause: err, msg: "store: running as root but there is no `postgres` user to run the server as (PostgreSQL refuses to run as root): install Debian's postgresql package, or set DATABASE_URL"}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	su := &serverUser{name: u.Username, uid: uid, gid: gid, homeDir: u.HomeDir, switchTo: true}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.Atoi(id); err == nil {
				su.groups = append(su.groups, g)
			}
		}
	}
	return su, nil
}

// who names the user in messages.
func (u *serverUser) who() string {
	if u.switchTo {
		return u.name + " user"
	}
	return "user " + u.name
}

func (u *serverUser) home() string {
	if u.homeDir != "" {
		return u.homeDir
	}
	return "/"
}

// apply makes cmd run as the server user.
func (u *serverUser) apply(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if !u.switchTo {
		return
	}
	groups := make([]uint32, 0, len(u.groups))
	for _, g := range u.groups {
		groups = append(groups, uint32(g))
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: groups}
}

func (u *serverUser) chown(path string) error {
	if !u.switchTo {
		return nil
	}
	return os.Chown(path, u.uid, u.gid)
}

// can reports whether the user has the permission bits (r=4, w=2, x=1) on fi.
func (u *serverUser) can(fi os.FileInfo, bits os.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == u.uid:
		return perm&(bits<<6) == bits<<6
	case u.inGroup(int(st.Gid)):
		return perm&(bits<<3) == bits<<3
	default:
		return perm&bits == bits
	}
}

func (u *serverUser) inGroup(gid int) bool {
	if gid == u.gid {
		return true
	}
	for _, g := range u.groups {
		if g == gid {
			return true
		}
	}
	return false
}

func (u *serverUser) owns(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == u.uid
}

// denied is the one-line permission error naming the directory, its owner and mode.
func (u *serverUser) denied(verb, dir string, fi os.FileInfo, hint string) error {
	return &clusterError{kind: ErrPermission, msg: fmt.Sprintf("store: %s cannot %s %s (owned by %s, mode %04o): %s",
		u.who(), verb, dir, ownerName(fi), uint32(fi.Mode().Perm()), hint)}
}

// prepareClusterDir makes dir usable by the server user: missing parents are created searchable
// (0755), every existing parent must be searchable by the user, and dir itself is created (or, if
// empty, taken over) 0700 and owned by the user.
func (u *serverUser) prepareClusterDir(dir string) error {
	var chain []string
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		chain = append([]string{p}, chain...)
		if p == filepath.Dir(p) {
			break
		}
	}
	for _, p := range chain {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create %s: %w", p, err)
			}
			os.Chmod(p, 0o755) // whatever the umask, the server user must be able to pass through
			continue
		}
		if err != nil {
			return fmt.Errorf("cluster directory %s: %w", dir, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("store: %s is not a directory", p)
		}
		if !u.can(fi, 1) {
			return u.denied("reach", p, fi, fmt.Sprintf("every directory above %s must be searchable by it (chmod o+x %s, or choose a data directory elsewhere)", dir, p))
		}
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		mkErr := os.Mkdir(dir, 0o700)
		if mkErr == nil {
			if err := u.chown(dir); err != nil {
				return fmt.Errorf("give %s to the %s: %w", dir, u.who(), err)
			}
			return nil
		}
		if !errors.Is(mkErr, os.ErrExist) { // another process may just have made it
			return fmt.Errorf("create cluster directory %s: %w", dir, mkErr)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("cluster directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("store: %s is not a directory", dir)
	}
	if !u.owns(fi) {
		entries, _ := os.ReadDir(dir)
		if !u.switchTo || len(entries) > 0 {
			return u.denied("write", dir, fi, fmt.Sprintf("the cluster directory must belong to the %s (remove it, chown -R %s it, or choose another data directory)", u.who(), u.name))
		}
		if err := u.chown(dir); err != nil {
			return fmt.Errorf("give %s to the %s: %w", dir, u.who(), err)
		}
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return u.denied("write", dir, fi, "cannot make it private (0700): "+err.Error())
		}
	}
	data := filepath.Join(dir, "data")
	if fi, err := os.Stat(data); err == nil && !u.owns(fi) {
		return u.denied("write", data, fi, fmt.Sprintf("the data directory must belong to the %s (chown -R %s it)", u.who(), u.name))
	}
	return nil
}

// prepareSocketDir creates a socket directory outside the cluster root (see socketDirFor), 0700
// and owned by the server user; an existing one must already belong to that user.
func (u *serverUser) prepareSocketDir(dir string) (string, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return "", fmt.Errorf("create socket directory %s: %w", dir, err)
		}
		if err := u.chown(dir); err != nil {
			return "", fmt.Errorf("give %s to the %s: %w", dir, u.who(), err)
		}
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() || !u.owns(fi) || !u.can(fi, 7) {
		return "", u.denied("write", dir, fi, "the socket directory must belong to it (remove it and start again)")
	}
	return dir, nil
}

func ownerName(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "?"
	}
	id := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return "uid " + id
}
