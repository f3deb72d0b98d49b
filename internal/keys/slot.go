package keys

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag, or of the whole key when it has none, modulo 16384.
func Slot(key string) uint16 {
	return crc16(hashTag(key)) & 16383
}

// hashTag returns the part of key that Redis Cluster hashes: the content of
// the first "{...}" when it is non-empty, else the whole key.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}
