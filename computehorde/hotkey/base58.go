package hotkey

import "errors"

// base58Alphabet is the Bitcoin alphabet, which SS58 uses.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// errBase58Char reports a character outside the Bitcoin base58 alphabet.
var errBase58Char = errors.New("invalid base58 character")

// base58Index maps an ASCII byte to its digit value, or -1 when it is not a digit.
var base58Index = func() [256]int8 {
	var index [256]int8
	for i := range index {
		index[i] = -1
	}
	for i := range len(base58Alphabet) {
		index[base58Alphabet[i]] = int8(i)
	}
	return index
}()

// base58Encode encodes b with leading zero bytes as leading '1's. Inputs are a few dozen bytes,
// so the quadratic long division is cheaper than a big.Int.
func base58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	digits := make([]byte, 0, len(b)*138/100+1) // log(256)/log(58) ≈ 1.37
	for _, c := range b[zeros:] {
		carry := int(c)
		for i := range digits {
			carry += int(digits[i]) << 8
			digits[i] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append(digits, byte(carry%58))
			carry /= 58
		}
	}
	out := make([]byte, zeros+len(digits))
	for i := range zeros {
		out[i] = '1'
	}
	for i, d := range digits {
		out[len(out)-1-i] = base58Alphabet[d]
	}
	return string(out)
}

// base58Decode reverses base58Encode.
func base58Decode(s string) ([]byte, error) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	bytes := make([]byte, 0, len(s))
	for i := zeros; i < len(s); i++ {
		d := base58Index[s[i]]
		if d < 0 {
			return nil, errBase58Char
		}
		carry := int(d)
		for j := range bytes {
			carry += int(bytes[j]) * 58
			bytes[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			bytes = append(bytes, byte(carry))
			carry >>= 8
		}
	}
	out := make([]byte, zeros+len(bytes))
	for i, b := range bytes {
		out[len(out)-1-i] = b
	}
	return out, nil
}
