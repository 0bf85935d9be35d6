// The real agents (claude, opencode) inside `run`: filled in by the issue-5 agent work.
