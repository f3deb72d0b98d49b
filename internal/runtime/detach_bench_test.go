package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

func BenchmarkSendDetached(b *testing.B) {
	r := newRuntime(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ok := rueidis.NewErrorResult(nil)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.SendDetached(ctx, time.Minute, func(context.Context) rueidis.RedisResult { return ok })
		}
	})
}
