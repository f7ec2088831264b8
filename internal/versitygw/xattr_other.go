//go:build !linux

package versitygw

// xattrSupported is false off Linux: versitygw then keeps metadata in a
// sidecar directory.
func xattrSupported(string) bool { return false }
