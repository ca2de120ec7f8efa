package apiserver

// closerStack holds the cleanups of what the server's assembly opened, each pushed as soon as
// what it releases is open. Unwinding runs them newest first, so every part is released before
// the parts it was built on: on a start-up error, exactly what the steps before the failure (and
// the failing step, up to its failure) opened; at shutdown, once the server has stopped serving.
type closerStack struct {
	closers []func()
}

func (s *closerStack) push(close func()) {
	s.closers = append(s.closers, close)
}

// unwind runs the cleanups newest first and empties the stack: a second unwind releases nothing twice.
func (s *closerStack) unwind() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
