"""Where outcome records live: one per agent of an ended session, in the project that
logged it.

projects/{p}/outcomes/{s}-{a}   a = sha256(agent name)[:16]. Merged by `outcomes.py`:
                                how the session ended (the Psychologist), the choice
                                frozen at its start and the trial arms it was given
                                (AgentConnect, under `selection`, when the agent's outcome
                                source names this project and agent), the pattern it
                                joined. Either half may land first.
projects/{p}/trials/{t}         a randomised trial of an accepted hypothesis's or
                                pattern's suggestion (`trials.py`)
orgs/{o}/agents/{a}             `running_trials.{t}`: what a session start of the agent
                                needs of each running trial, written by `trials.py`
                                when the trial starts and stops (the start reads the agent
                                anyway, so assignment costs no read)
"""

from __future__ import annotations

import hashlib

from google.cloud import firestore

from shared.store import collection, document

SELECTION = "selection"
"""The map AgentConnect's half of a record is merged under."""


def outcomes(project_id: str) -> firestore.CollectionReference:
    return collection("projects", project_id, "outcomes")


def outcome_ref(project_id: str, session_id: str, agent: str) -> firestore.DocumentReference:
    """One agent's outcome of a session. Agent names are the client's strings: hashed,
    they make a valid, fixed-length key, and a session's outcomes stay side by side."""
    key = hashlib.sha256(agent.encode()).hexdigest()[:16]
    return outcomes(project_id).document(f"{session_id}-{key}")


def trials(project_id: str) -> firestore.CollectionReference:
    return collection("projects", project_id, "trials")


def trial_ref(project_id: str, trial_id: str) -> firestore.DocumentReference:
    return trials(project_id).document(trial_id)


def connect_agent_ref(org_id: str, agent_id: str) -> firestore.DocumentReference:
    """An AgentConnect agent, whose running trials a session start reads."""
    return document("orgs", org_id, "agents", agent_id)
