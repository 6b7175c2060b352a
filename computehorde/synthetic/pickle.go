package synthetic

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Pickle opcodes of protocol 2, the oldest protocol every Python 3 reads; see Python's
// Lib/pickletools.py for their definitions.
const (
	pickleProto      = 0x80
	pickleStop       = '.'
	pickleMark       = '('
	pickleEmptyDict  = '}'
	pickleEmptyList  = ']'
	pickleSetItems   = 'u'
	pickleAppends    = 'e'
	pickleBinUnicode = 'X'
	pickleBinInt1    = 'K'
	pickleBinInt     = 'J'
)

// pickleItem is one key and value of a pickled dict. Value is a string, an int, a []string or an
// []int: the shapes the hashcat payload needs and nothing more.
type pickleItem struct {
	Key   string
	Value any
}

// appendPickle appends the pickle of a dict holding items, in their order, as Python's
// pickle.loads reads it back: str values become str, int values int, slices lists.
func appendPickle(dst []byte, items []pickleItem) ([]byte, error) {
	dst = append(dst, pickleProto, 2, pickleEmptyDict, pickleMark)
	for _, item := range items {
		dst = appendPickleString(dst, item.Key)
		var err error
		if dst, err = appendPickleValue(dst, item.Value); err != nil {
			return nil, fmt.Errorf("pickle %q: %w", item.Key, err)
		}
	}
	return append(dst, pickleSetItems, pickleStop), nil
}

func appendPickleValue(dst []byte, value any) ([]byte, error) {
	switch v := value.(type) {
	case string:
		return appendPickleString(dst, v), nil
	case int:
		return appendPickleInt(dst, v)
	case []string:
		dst = append(dst, pickleEmptyList, pickleMark)
		for _, s := range v {
			dst = appendPickleString(dst, s)
		}
		return append(dst, pickleAppends), nil
	case []int:
		dst = append(dst, pickleEmptyList, pickleMark)
		for _, n := range v {
			var err error
			if dst, err = appendPickleInt(dst, n); err != nil {
				return nil, err
			}
		}
		return append(dst, pickleAppends), nil
	default:
		return nil, fmt.Errorf("unsupported type %T", value)
	}
}

// appendPickleString appends s as a Python str. Go strings built here are always valid UTF-8.
func appendPickleString(dst []byte, s string) []byte {
	dst = append(dst, pickleBinUnicode)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendPickleInt(dst []byte, n int) ([]byte, error) {
	switch {
	case n >= 0 && n <= math.MaxUint8:
		return append(dst, pickleBinInt1, byte(n)), nil
	case n >= math.MinInt32 && n <= math.MaxInt32:
		dst = append(dst, pickleBinInt)
		return binary.LittleEndian.AppendUint32(dst, uint32(int32(n))), nil
	default:
		return nil, fmt.Errorf("int %d outside int32", n)
	}
}
