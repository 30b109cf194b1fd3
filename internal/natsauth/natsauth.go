package natsauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// The roles of a NATS user (docs/SECURITY.md has the table).
const (
	// RoleClient: agent workers on the Go client's NodeNATS transport and
	// pi-ctl's NATS commands that are not admin: pi-node's API, nothing of
	// JetStream.
	RoleClient = "client"
	// RoleReader: dashboards and followers: the API's read operations and
	// the session subjects' live messages.
	RoleReader = "reader"
	// RoleAdmin: operators: everything, JetStream's API included (pi-ctl
	// failover, failback, archive, bench).
	RoleAdmin = "admin"
	// RoleJetStream: workers on the Go client's JetStream transport: the
	// session stream and the cursor bucket, read and append, and not one
	// JetStream administration subject.
	RoleJetStream = "jetstream"
	// RoleSystem: NATS tooling (nats server report jetstream, surveyor,
	// prometheus-nats-exporter's server metrics): a user of the servers'
	// system account, which sees every server's state and none of the
	// account that holds the sessions.
	RoleSystem = "system"
)

// Roles are the valid roles, in the docs' order.
var Roles = []string{RoleClient, RoleReader, RoleJetStream, RoleAdmin, RoleSystem}

// File is the --nats-auth file: one JSON object.
//
//	{"users": [
//	   {"user": "worker", "password": "$2a$11$…", "role": "client"},
//	   {"nkey": "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", "role": "reader"}],
//	 "routes":   {"user": "route", "password": "…"},
//	 "gateways": {"user": "gateway", "password": "…"}}
//
// User passwords are bcrypt hashes (the server compares them; the file
// never holds a client's secret). Routes and gateways authenticate the
// servers to each other: a server sends that password when it dials
// another, so it is stored as it is, in a file only pi-node reads.
type File struct {
	Users    []User `json:"users"`
	Routes   *Peer  `json:"routes,omitempty"`
	Gateways *Peer  `json:"gateways,omitempty"`
}

// User is one NATS user: by user name and bcrypt password, or by NKey
// (the public key; the client signs with its seed).
type User struct {
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	NKey     string `json:"nkey,omitempty"`
	Role     string `json:"role"`
}

// Name is how logs and audit lines name the user.
func (u User) Name() string {
	if u.User != "" {
		return u.User
	}
	return u.NKey
}

// Peer is the credential servers of one cluster (routes) or of the regions
// (gateways) present to each other.
type Peer struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// InternalUser is the name of pi-node's own user on its embedded server:
// it connects in process with a password made at start and never written
// anywhere, so a file cannot name it.
const InternalUser = "_pi-node"

var (
	bcryptHash = regexp.MustCompile(`^\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}$`)
	userName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`)
	nkeyUser   = regexp.MustCompile(`^U[A-Z2-7]{55}$`)
)

// Load reads and checks the file at path.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--nats-auth: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("--nats-auth %s: %w", path, err)
	}
	return f, nil
}

// Parse reads a File and checks it: every user has a valid role and one
// credential, names are unique, passwords are bcrypt hashes. Errors name
// the user's index and field.
func Parse(b []byte) (*File, error) {
	var f File
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a users file: %w", err)
	}
	if d.More() {
		return nil, errors.New("not a users file: more than one JSON value")
	}
	return &f, f.Check()
}

// Check validates f (Parse calls it).
func (f *File) Check() error {
	if len(f.Users) == 0 {
		return errors.New("users: empty (a server with no user admits nobody)")
	}
	seen := map[string]bool{}
	for i, u := range f.Users {
		at := fmt.Sprintf("users[%d]", i)
		switch {
		case !slices.Contains(Roles, u.Role):
			return fmt.Errorf("%s.role: %q is not one of %s", at, u.Role, strings.Join(Roles, ", "))
		case u.User != "" && u.NKey != "":
			return fmt.Errorf("%s: has both user and nkey; give one", at)
		case u.NKey != "":
			if !nkeyUser.MatchString(u.NKey) {
				return fmt.Errorf("%s.nkey: not a user's public NKey (U followed by 55 base32 characters)", at)
			}
			if u.Password != "" {
				return fmt.Errorf("%s.password: an nkey user has no password", at)
			}
		case u.User == "":
			return fmt.Errorf("%s: needs user (with password) or nkey", at)
		case !userName.MatchString(u.User) || u.User == InternalUser:
			return fmt.Errorf("%s.user: %q is not a valid user name (letters, digits, . _ @ -)", at, u.User)
		case !bcryptHash.MatchString(u.Password):
			return fmt.Errorf("%s.password: user %s: not a bcrypt hash; make one with `pi-ctl nats-user new %s --role %s`", at, u.User, u.User, u.Role)
		}
		if seen[u.Name()] {
			return fmt.Errorf("%s: %s is listed twice", at, u.Name())
		}
		seen[u.Name()] = true
	}
	for _, np := range f.peers() {
		name, p := np.name, np.p
		if p == nil {
			continue
		}
		if !userName.MatchString(p.User) || p.Password == "" {
			return fmt.Errorf("%s: needs user and password", name)
		}
		if strings.ContainsAny(p.Password, "@:/ ") {
			return fmt.Errorf("%s.password: must not contain @ : / or a space (it goes into route URLs)", name)
		}
	}
	return nil
}

// namedPeer is a Peer with its key in the file.
type namedPeer struct {
	name string
	p    *Peer
}

// peers are f's peer credentials in file order (nil when absent).
func (f *File) peers() []namedPeer {
	return []namedPeer{{"routes", f.Routes}, {"gateways", f.Gateways}}
}

// Marshal is f as a file, indented, one user per line.
func (f *File) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("{\"users\": [\n")
	for i, u := range f.Users {
		line, _ := json.Marshal(u)
		b.WriteString("  ")
		b.Write(line)
		if i < len(f.Users)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]")
	for _, p := range f.peers() {
		if p.p != nil {
			line, _ := json.Marshal(p.p)
			fmt.Fprintf(&b, ",\n\"%s\": %s", p.name, line)
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// HashCost is the bcrypt cost of HashPassword's hashes: the least bcrypt
// allows (about 1 ms). The passwords hashed are random (secrets.Password,
// 130 bits), so a higher cost adds nothing a guesser would notice, while
// every failed login costs the server the hash's time in CPU: at cost 11
// (111 ms) a dozen clients sending wrong passwords kept two cores busy.
const HashCost = bcrypt.MinCost

// MinPasswordLen is the shortest password HashPassword takes: it is for
// generated passwords only (26 characters), and a short, chosen one would
// be cheap to guess at HashCost.
const MinPasswordLen = 22

// HashPassword is the bcrypt hash of a generated password as a File
// stores it, at HashCost; shorter passwords than MinPasswordLen are
// refused.
func HashPassword(password string) (string, error) {
	if len(password) < MinPasswordLen {
		return "", fmt.Errorf("a password of %d characters: bcrypt cost %d is for generated passwords of %d or more", len(password), HashCost, MinPasswordLen)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), HashCost)
	return string(h), err
}
