package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/commonly/runtime/shared/money"
)

// The spend alarm's event on EventBridge.
const (
	EventSource     = "commonly.hosted-runtime"
	AlarmDetailType = "SpendAlarmRaised"
)

// Alarm is the detail of a SpendAlarmRaised event: a user's UTC day
// reached the alarm threshold.
type Alarm struct {
	UserID          string       `json:"userId"`
	Day             string       `json:"day"`
	CostMicros      money.Micros `json:"costMicros"`
	CostUSD         string       `json:"costUSD"`
	ThresholdMicros money.Micros `json:"thresholdMicros"`
	Turns           int64        `json:"turns"`
	// AlarmID is the same for every raise of one user, day and threshold,
	// so a consumer drops the duplicate a retry may put.
	AlarmID string `json:"alarmId"`
}

// AlarmID is the deterministic id of the alarm of a user's day at a
// threshold.
func AlarmID(k DayKey, threshold money.Micros) string {
	sum := sha256.Sum256([]byte("spend-alarm\x00" + k.UserID + "\x00" + k.Day + "\x00" + strconv.FormatInt(int64(threshold), 10)))
	return "alarm_" + hex.EncodeToString(sum[:16])
}

func newAlarm(k DayKey, d Day, total, threshold money.Micros) Alarm {
	return Alarm{
		UserID: k.UserID, Day: k.Day,
		CostMicros: total, CostUSD: total.USD(), ThresholdMicros: threshold,
		Turns: d.Turns, AlarmID: AlarmID(k, threshold),
	}
}

// Publisher puts alarm events on the bus. It returns one error per alarm,
// nil for each one put; a failed call fails all of its alarms.
type Publisher interface {
	Publish(ctx context.Context, alarms []Alarm) []error
}
