package hostd

import "time"

// progressEvery is the least time between two progress frames of one call: the host sends
// the first report at once, then the newest at most once per interval, and the newest
// unsent one just before the result ([throttle.Latest]).
const progressEvery = time.Second
