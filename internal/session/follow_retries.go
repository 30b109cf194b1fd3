package session

import "context"

type followRetriesKey struct{}

// WithFollowRetries returns ctx carrying report, which a Feed's Follow
// called with that ctx tells of each attempt it retries after without
// having delivered anything: a consumer it could not make, a log leader
// that did not answer. Follow returns only when ctx ends or apply fails,
// so without a report a Store that applies nothing for a minute says
// nothing of why. report is called from Follow's goroutine.
func WithFollowRetries(ctx context.Context, report func(error)) context.Context {
	return context.WithValue(ctx, followRetriesKey{}, report)
}

// ReportFollowRetry tells the report ctx carries (WithFollowRetries), if
// any, that Follow retries after err without progress.
func ReportFollowRetry(ctx context.Context, err error) {
	if report, ok := ctx.Value(followRetriesKey{}).(func(error)); ok && report != nil && err != nil {
		report(err)
	}
}
