"""The topic map tests: clustering, placement, stable ids, the TopicMap task, the command."""
