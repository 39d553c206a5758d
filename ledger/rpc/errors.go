package rpc

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/ledger"
)

// invalid returns an InvalidArgument error for a request field.
func invalid(format string, a ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, a...))
}

// toConnect gives a ledger error its Connect code. The ledger's messages
// already say what fixes a refused receipt; for the other kinds a hint is
// added. An error of no known kind is an internal fault:
// it is logged, and the caller is told only that.
func (s *Service) toConnect(err error) error {
	code, fix := codeOf(err)
	if code == connect.CodeInternal {
		s.logger.Error("ledger failure", "err", err)
		return connect.NewError(code, errors.New("internal ledger error; the server's log has the details"))
	}
	if fix != "" {
		err = fmt.Errorf("%w; %s", err, fix)
	}
	return connect.NewError(code, err)
}

func codeOf(err error) (connect.Code, string) {
	switch {
	case errors.Is(err, ledger.ErrInvalid):
		return connect.CodeInvalidArgument, ""
	case errors.Is(err, ledger.ErrUnknownKey):
		return connect.CodePermissionDenied, ""
	case errors.Is(err, ledger.ErrChain):
		return connect.CodeFailedPrecondition, ""
	case errors.Is(err, ledger.ErrNotFound):
		return connect.CodeNotFound, ""
	case errors.Is(err, ledger.ErrRange):
		return connect.CodeOutOfRange, ""
	case errors.Is(err, ledger.ErrClosed):
		return connect.CodeUnavailable, "retry when the ledger server is back"
	case errors.Is(err, ledger.ErrUnavailable):
		return connect.CodeUnavailable, "the ledger server cannot reach its database; retry (an append may have been committed: sending it again is harmless)"
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled, ""
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded, "retry with a longer deadline"
	}
	return connect.CodeInternal, ""
}
