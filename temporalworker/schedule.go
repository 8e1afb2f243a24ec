package temporalworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Schedule defaults.
const (
	// DefaultEvery is how often a schedule starts a pass.
	DefaultEvery = 12 * time.Hour
	// DefaultJitter spreads the starts of schedules made at once.
	DefaultJitter = 30 * time.Minute
	// DefaultScheduleID names the schedule and, with a timestamp
	// appended by Temporal, the passes it starts.
	DefaultScheduleID = "tqscavenger"
)

// ScheduleSpec is a Temporal Schedule that starts a pass every Every,
// each start delayed by up to Jitter, skipping a start while the previous
// pass still runs (overlap policy skip): one pass at a time, as Temporal's
// own scanner.
type ScheduleSpec struct {
	ID        string // default DefaultScheduleID
	TaskQueue string // default DefaultTaskQueue
	Every     time.Duration
	Jitter    time.Duration
	// Pass is the pass each start runs.
	Pass PassDescription
	// Paused creates the schedule paused.
	Paused bool
}

func (s ScheduleSpec) withDefaults() ScheduleSpec {
	if s.ID == "" {
		s.ID = DefaultScheduleID
	}
	if s.TaskQueue == "" {
		s.TaskQueue = DefaultTaskQueue
	}
	if s.Every == 0 {
		s.Every = DefaultEvery
	}
	if s.Jitter < 0 {
		s.Jitter = 0
	}
	return s
}

func (s ScheduleSpec) validate() error {
	if s.Every < time.Second {
		return fmt.Errorf("%w: a schedule interval of %s: want at least 1s", ErrBadDescription, s.Every)
	}
	if s.Jitter >= s.Every {
		return fmt.Errorf("%w: jitter %s is not under the interval %s", ErrBadDescription, s.Jitter, s.Every)
	}
	return s.Pass.Validate()
}

func (s ScheduleSpec) spec() client.ScheduleSpec {
	return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: s.Every}}, Jitter: s.Jitter}
}

func (s ScheduleSpec) action() *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID:        s.ID + "-pass",
		Workflow:  PassWorkflowName,
		Args:      []any{s.Pass},
		TaskQueue: s.TaskQueue,
	}
}

// CreateSchedule installs s.
func CreateSchedule(ctx context.Context, c client.Client, s ScheduleSpec) error {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return err
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      s.ID,
		Spec:    s.spec(),
		Action:  s.action(),
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Paused:  s.Paused,
		Note:    "tqscavenger: scavenges Temporal's task-queue tables",
	})
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", s.ID, err)
	}
	return nil
}

// UpdateSchedule replaces the spec, action and overlap policy of the
// schedule s.ID, keeping its state (paused or not) and history.
func UpdateSchedule(ctx context.Context, c client.Client, s ScheduleSpec) error {
	return ModifySchedule(ctx, c, s.ID, func(ScheduleSpec) (ScheduleSpec, error) { return s, nil })
}

// ModifySchedule changes the schedule id to what change makes of it:
// change gets the schedule as it is (its interval, jitter, task queue and
// pass description) and returns the new one, in one update guarded by the
// schedule's conflict token. The state (paused or not) and history stay.
func ModifySchedule(ctx context.Context, c client.Client, id string, change func(old ScheduleSpec) (ScheduleSpec, error)) error {
	if id == "" {
		id = DefaultScheduleID
	}
	h := c.ScheduleClient().GetHandle(ctx, id)
	err := h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		old := specOf(id, &in.Description)
		s, err := change(old)
		if err != nil {
			return nil, err
		}
		s.ID = id
		s = s.withDefaults()
		if err := s.validate(); err != nil {
			return nil, err
		}
		sch := in.Description.Schedule
		spec := s.spec()
		sch.Spec = &spec
		sch.Action = s.action()
		if sch.Policy == nil {
			sch.Policy = &client.SchedulePolicies{}
		}
		sch.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
		return &client.ScheduleUpdate{Schedule: &sch}, nil
	}})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, notFound(ctx, h, id, err))
	}
	return nil
}

// specOf reads the ScheduleSpec of a schedule's description; a field it
// cannot read is left zero.
func specOf(id string, d *client.ScheduleDescription) ScheduleSpec {
	s := ScheduleSpec{ID: id}
	if sp := d.Schedule.Spec; sp != nil {
		if len(sp.Intervals) > 0 {
			s.Every = sp.Intervals[0].Every
		}
		s.Jitter = sp.Jitter
	}
	if st := d.Schedule.State; st != nil {
		s.Paused = st.Paused
	}
	if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		s.TaskQueue = a.TaskQueue
		if len(a.Args) == 1 {
			if p, ok := a.Args[0].(*commonpb.Payload); ok {
				_ = converter.GetDefaultDataConverter().FromPayload(p, &s.Pass)
			}
		}
	}
	return s
}

// ErrScheduleNotFound is wrapped by the errors of the schedule functions
// when the schedule does not exist (or was deleted).
var ErrScheduleNotFound = errors.New("the schedule does not exist")

// notFound returns err, or ErrScheduleNotFound if the schedule is gone:
// Temporal answers a second delete with "workflow execution already
// completed", which tells an operator nothing.
func notFound(ctx context.Context, h client.ScheduleHandle, id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s", ErrScheduleNotFound, id)
	}
	if _, derr := h.Describe(ctx); errors.As(derr, &nf) {
		return fmt.Errorf("%w: %s", ErrScheduleNotFound, id)
	}
	return err
}

// ScheduleState is what DescribeSchedule reports.
type ScheduleState struct {
	ID             string           `json:"id"`
	Every          []time.Duration  `json:"every"`
	Jitter         time.Duration    `json:"jitter"`
	Overlap        string           `json:"overlap"`
	Paused         bool             `json:"paused"`
	TaskQueue      string           `json:"task_queue"`
	Workflow       string           `json:"workflow"`
	Pass           *PassDescription `json:"pass,omitempty"`
	Actions        int              `json:"actions"`
	SkippedOverlap int              `json:"skipped_overlap"`
	Running        []string         `json:"running"`
	Recent         []RecentAction   `json:"recent"`
	Next           []time.Time      `json:"next"`
}

// RecentAction is one start of a schedule.
type RecentAction struct {
	Scheduled  time.Time `json:"scheduled"`
	Started    time.Time `json:"started"`
	WorkflowID string    `json:"workflow_id"`
	RunID      string    `json:"run_id"`
}

// DescribeSchedule reads the schedule id.
func DescribeSchedule(ctx context.Context, c client.Client, id string) (ScheduleState, error) {
	d, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	if err != nil {
		return ScheduleState{}, fmt.Errorf("describe schedule %s: %w", id, err)
	}
	st := ScheduleState{ID: id, Actions: d.Info.NumActions, SkippedOverlap: d.Info.NumActionsSkippedOverlap, Next: d.Info.NextActionTimes}
	if sp := d.Schedule.Spec; sp != nil {
		for _, iv := range sp.Intervals {
			st.Every = append(st.Every, iv.Every)
		}
		st.Jitter = sp.Jitter
	}
	if p := d.Schedule.Policy; p != nil {
		st.Overlap = enumspb.ScheduleOverlapPolicy_name[int32(p.Overlap)]
	}
	if s := d.Schedule.State; s != nil {
		st.Paused = s.Paused
	}
	if a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction); ok {
		st.TaskQueue = a.TaskQueue
		st.Workflow = fmt.Sprint(a.Workflow)
		if len(a.Args) == 1 {
			if p, ok := a.Args[0].(*commonpb.Payload); ok {
				var pd PassDescription
				if err := converter.GetDefaultDataConverter().FromPayload(p, &pd); err == nil {
					st.Pass = &pd
				}
			}
		}
	}
	for _, r := range d.Info.RunningWorkflows {
		st.Running = append(st.Running, r.WorkflowID)
	}
	for _, r := range d.Info.RecentActions {
		ra := RecentAction{Scheduled: r.ScheduleTime, Started: r.ActualTime}
		if r.StartWorkflowResult != nil {
			ra.WorkflowID, ra.RunID = r.StartWorkflowResult.WorkflowID, r.StartWorkflowResult.FirstExecutionRunID
		}
		st.Recent = append(st.Recent, ra)
	}
	return st, nil
}

// TriggerSchedule starts a pass of the schedule id now (skipped if one
// runs).
func TriggerSchedule(ctx context.Context, c client.Client, id string) error {
	err := c.ScheduleClient().GetHandle(ctx, id).Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP})
	if err != nil {
		return fmt.Errorf("trigger schedule %s: %w", id, err)
	}
	return nil
}

// DeleteSchedule deletes the schedule id; the passes it started run on.
func DeleteSchedule(ctx context.Context, c client.Client, id string) error {
	if id == "" {
		return errors.New("delete schedule: no id")
	}
	h := c.ScheduleClient().GetHandle(ctx, id)
	if err := h.Delete(ctx); err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, notFound(ctx, h, id, err))
	}
	return nil
}
