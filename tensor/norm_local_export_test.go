package tensor

// NormLocal is normLocal, for tests.
var NormLocal = normLocal
