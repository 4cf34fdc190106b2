package observed

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
)

// A Slot is a part of the evidence model that a data source declares in a
// file of its own (Declare), instead of a field of Snapshot: adding a source
// edits no shared struct. Its value is written once by the source's reader
// and read by the rules; snapshot files save and load it like any field
// (package snapfile, by its declared type). The convention is Snapshot's: a
// slot never set was not read; a reader that found nothing sets an empty value.
type Slot[T any] struct{ name string }

// Slots holds the values of the declared slots, by name.
type Slots map[string]any

var (
	// declared are the slots' types by name, filled by Declare at
	// initialisation only.
	declared = map[string]reflect.Type{}
	// slotsMu guards every snapshot's Slots: the readers of one stage run
	// at once, and each sets its own slot.
	slotsMu sync.Mutex
)

// Declare declares a slot of type T named name, the key it is saved under.
// Call it from a package-level variable; a name declared twice panics at
// start-up.
func Declare[T any](name string) Slot[T] {
	if _, dup := declared[name]; dup || name == "" {
		panic(fmt.Sprintf("snapshot: slot %q declared twice or unnamed", name))
	}
	declared[name] = reflect.TypeFor[T]()
	return Slot[T]{name: name}
}

// Name is the key the slot is saved under.
func (k Slot[T]) Name() string { return k.name }

// Get returns the slot's value in s, and whether it was set (read).
func (k Slot[T]) Get(s *Snapshot) (T, bool) {
	slotsMu.Lock()
	defer slotsMu.Unlock()
	v, ok := s.Slots[k.name].(T)
	return v, ok
}

// Set records the slot's value in s.
func (k Slot[T]) Set(s *Snapshot, v T) {
	slotsMu.Lock()
	defer slotsMu.Unlock()
	if s.Slots == nil {
		s.Slots = Slots{}
	}
	s.Slots[k.name] = v
}

// SlotType returns the type declared for the slot name; false for a name no
// slot has (a file from another release).
func SlotType(name string) (reflect.Type, bool) {
	t, ok := declared[name]
	return t, ok
}

// SlotNames lists the declared slots, sorted.
func SlotNames() []string { return slices.Sorted(maps.Keys(declared)) }
