"""Drive the real Claude Code binary offline: a scripted stand-in for the
Anthropic Messages API (``standin``) and a runner (``harness``). See README.md."""
