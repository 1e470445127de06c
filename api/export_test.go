package api

import "time"

// SetCheckTimeout shortens the readiness deadline so a test of a hung
// dependency does not wait the production two seconds.
func (s *Server) SetCheckTimeout(d time.Duration) { s.checkTimeout = d }

// ErrorCodes is every code of the error table, for the test that the
// OpenAPI document's Error schema lists exactly these.
var ErrorCodes = errorCodes
