package receipt

// TestKey is testKey for the tests of package receipt_test, which may
// import the verifier (it imports this package).
var TestKey = testKey
