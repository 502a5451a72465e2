"""Closing the loop: the outcome records that join how a session was set up (AgentConnect's
frozen choice) to how it ended (the Psychologist's log), and the estimators read over
them. Both APIs import this domain; it imports neither."""
