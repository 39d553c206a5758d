package proxy

// Test helpers for the external tests of this directory (httpload_test.go),
// which import proxy/httpserve and so cannot be in package proxy.
var (
	NewBank    = newBank
	BankPolicy = bankPolicy
)

// SliceRecorder keeps events in memory.
type SliceRecorder = sliceRecorder
