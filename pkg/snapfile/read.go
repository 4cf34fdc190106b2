package snapfile

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A snapshot is made to be attached to a ticket and replayed by someone
// else, so Load reads a file from a stranger: it takes regular files only,
// caps what it reads before it decodes, and checks what it decoded before
// anything walks it. Every refusal is an error naming what is wrong.

// DefaultMaxBytes is the default of Limits.MaxBytes: a saved run of a few
// thousand stuck objects takes a few MiB (the lab's whole gallery, -A, 62
// KB). It bounds what a replay may take: text becomes report lines several
// times over, so 6 MiB of the worst text (the longest condition messages,
// or 200 of the longest finalizers on every target) replays in every format
// under 300 MiB of peak memory (TestLargestAcceptedSnapshotReplaysBounded:
// 120-185 MiB measured on the plugin).
const DefaultMaxBytes = 6 << 20

// bytesPerObject is how many bytes of the limit each JSON object of the file
// may use at least: an object of a few bytes can become a Go value of more
// than a kilobyte (an empty pod), so their number is capped too. Saved runs
// use about 80 bytes per object; a file of many tiny objects is refused long
// before it could take hundreds of MiB.
const bytesPerObject = 512

// Limits bound what Load accepts.
type Limits struct {
	// MaxBytes caps the file's size and, gzip-compressed, its decompressed
	// size; the number of JSON objects it holds and of objects its targets
	// unfold into (see observed.CheckGraph) scale with it.
	MaxBytes int64
}

// DefaultLimits are Load's limits unless told otherwise.
var DefaultLimits = Limits{MaxBytes: DefaultMaxBytes}

func (l Limits) maxObjects() int { return int(l.MaxBytes / bytesPerObject) }

// maxUnfolded: saved runs unfold into a few times as many objects as they
// hold targets, and hold one target per forty JSON objects or more.
func (l Limits) maxUnfolded() int { return max(l.maxObjects()/8, 1) }

// Load reads a file Save wrote (gzip-compressed or not, whatever its name)
// within DefaultLimits.
func Load(path string) (Saved, error) {
	return LoadLimited(context.Background(), path, DefaultLimits)
}

// LoadLimited reads a file Save wrote, within limits; ctx ends the read
// between its steps.
func LoadLimited(ctx context.Context, path string, limits Limits) (Saved, error) {
	data, err := readCapped(path, limits.MaxBytes)
	if err != nil {
		return Saved{}, err
	}
	if err := ctx.Err(); err != nil {
		return Saved{}, err
	}
	s, err := DecodeLimited(bytes.NewReader(data), limits)
	if err != nil {
		return Saved{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, ctx.Err()
}

// readCapped reads a regular file of at most max bytes, decompressed when it
// is gzip, into memory.
func readCapped(path string, max int64) ([]byte, error) {
	// Stat before open: opening a FIFO with no writer would block.
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, info, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil { // the file opened, should the path have changed
		return nil, err
	}
	if err := regular(path, info, max); err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s could not be read: %w", path, err)
	}
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return data, nil
	}
	data, err = gunzipAtMost(data, max)
	if err != nil {
		return nil, fmt.Errorf("%s %w", path, err)
	}
	return data, nil
}

// gunzipAtMost decompresses data, refusing more than max bytes. It
// decompresses twice, first only to count: what it keeps is allocated once,
// at its size, and a bomb allocates nothing.
func gunzipAtMost(data []byte, max int64) ([]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("is not a readable gzip file: %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(gz, max+1))
	if err != nil {
		return nil, fmt.Errorf("could not be decompressed: %w", err)
	}
	if n > max {
		return nil, tooLarge("decompresses to more than", max)
	}
	if err := gz.Reset(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if _, err := io.ReadFull(gz, out); err != nil {
		return nil, fmt.Errorf("could not be decompressed: %w", err)
	}
	return out, nil
}

func regular(path string, info os.FileInfo, max int64) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): a snapshot is a file --save-snapshot wrote", path, info.Mode().Type())
	}
	if info.Size() > max {
		return fmt.Errorf("%s %w", path, tooLarge("is larger than", max))
	}
	return nil
}

// readAtMost reads r to its end, refusing more than max bytes.
func readAtMost(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("could not be read: %w", err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge(what, max)
	}
	return data, nil
}

func tooLarge(what string, max int64) error {
	return fmt.Errorf("%s %d bytes, this plugin's limit for a snapshot (--snapshot-max-size raises it)", what, max)
}

// DecodeLimited reads a file's JSON document within limits and checks that
// its targets can be diagnosed safely.
func DecodeLimited(r io.Reader, limits Limits) (Saved, error) {
	data, err := readAtMost(r, limits.MaxBytes, "is larger than")
	if err != nil {
		return Saved{}, fmt.Errorf("the snapshot %w", err)
	}
	if err := measure(data, limits); err != nil {
		return Saved{}, err
	}
	s, err := decode(data)
	if err != nil {
		return Saved{}, err
	}
	if err := check(s.Snapshot, limits); err != nil {
		return Saved{}, fmt.Errorf("a damaged snapshot: %w", err)
	}
	return s, nil
}

// MaxString is the longest string a snapshot may hold: the longest text the
// API keeps in what the rules read is a condition's message (32 KiB), and
// JSON may escape some of its bytes.
const MaxString = 40 << 10

// measure refuses, before anything is decoded, a file whose JSON would
// take far more memory than its size says: more JSON objects than the
// limit allows (an empty object becomes a Go value of a kilobyte), a
// string longer than MaxString (rendering copies each string a few times),
// or a list of more elements than the limit allows objects. It only tells
// strings apart from the rest: json.Unmarshal judges the syntax.
func measure(data []byte, limits Limits) error {
	maxObjects := limits.maxObjects()
	objects := 0
	var lists []int // the open lists' element counts; -1 for an open object
	inString, escaped, start := false, false, 0
	for i, b := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
			if i-start > MaxString {
				return longString(i-start, start)
			}
		case inString:
		case b == '"':
			inString, start = true, i+1
		case b == '{':
			if objects++; objects > maxObjects {
				return fmt.Errorf("a snapshot of more than %d JSON objects, this plugin's limit for its size (--snapshot-max-size raises it)", maxObjects)
			}
			lists = append(lists, -1)
		case b == '[':
			lists = append(lists, 0)
		case (b == '}' || b == ']') && len(lists) > 0:
			lists = lists[:len(lists)-1]
		case b == ',' && len(lists) > 0 && lists[len(lists)-1] >= 0:
			if lists[len(lists)-1]++; lists[len(lists)-1] >= maxObjects {
				return fmt.Errorf("a snapshot with a list of more than %d elements, this plugin's limit for its size (--snapshot-max-size raises it)", maxObjects)
			}
		}
	}
	if inString && len(data)-start > MaxString {
		return longString(len(data)-start, start)
	}
	return nil
}

func longString(n, at int) error {
	return fmt.Errorf("a snapshot with a string of %d bytes (at byte %d), more than this plugin's limit of %d", n, at, MaxString)
}

// badFinalizer names a finalizer the API would never have kept (each is a
// qualified name, at most 316 bytes: validation.IsQualifiedName, as the
// apiserver checks it), which no live run can have saved; every rule quotes
// finalizers, so one of megabytes would be copied into every sentence.
func badFinalizer(finalizers []string) string {
	for _, f := range finalizers {
		if len(validation.IsQualifiedName(f)) > 0 {
			return fmt.Sprintf("a finalizer that is not a qualified name (%d bytes, %q...)", len(f), f[:min(len(f), 40)])
		}
	}
	return ""
}

// check refuses a snapshot its rules could not walk: targets with no object
// or with a finalizer no apiserver would keep,
// typed forms the rules rely on that are missing, and target graphs that
// loop, nest too deep or unfold into too many objects.
func check(s *observed.Snapshot, limits Limits) error {
	var errs []string
	for i, t := range s.AllTargets() {
		name := fmt.Sprintf("target %d (%s/%s)", i, t.Ref.Resource, t.Ref.Name)
		if t.Object == nil {
			errs = append(errs, name+" has no object")
		} else if bad := badFinalizer(t.Object.GetFinalizers()); bad != "" {
			errs = append(errs, name+" has "+bad)
		}
		for _, p := range t.ClaimUsers {
			if p.Pod == nil {
				errs = append(errs, name+": a pod using the claim is not a pod")
			}
		}
		if c := t.Contents; c != nil {
			for _, p := range append(slices.Clone(c.Pods), c.Live...) {
				if p.Pod == nil {
					errs = append(errs, name+": a pod it holds is not a pod")
				}
			}
		}
		if len(errs) > 3 {
			break
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return s.CheckGraph(limits.maxUnfolded())
}
