package workflows

// TaskQueue is the task queue Sluice's workflows and activities run on
// unless a deployment names another (--task-queue): the one spelling of it
// that the worker, the schedules, the watches and cmd/sluice share.
const TaskQueue = "sluice"
