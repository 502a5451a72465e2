"""The Psychologist: agent session logs in, cited hypotheses about agents out."""
