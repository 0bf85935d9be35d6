// Two dispatches of one repository at once: filled in by the issue-5 concurrency work.
