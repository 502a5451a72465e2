"""Settings that point the Gemini client at the test server as a given model and backend."""

from __future__ import annotations

import json
from pathlib import Path

from cli.gemini_stand_in import GeminiTestServer
from shared.models import PROFILES, Backend
from tests.api import Configure

SERVED_ON_THE_DEVELOPER_API = sorted(
    name for name, profile in PROFILES.items() if profile.served_by(Backend.DEVELOPER)
)


def use_vertex(configure: Configure, server: GeminiTestServer, folder: Path, model: str) -> None:
    """Vertex AI through Application Default Credentials, as a deployed worker has them:
    a workload identity federation file whose token exchange the test server answers."""
    subject = folder / "subject-token"
    subject.write_text("subject-token")
    credentials = folder / "credentials.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "external_account",
                "audience": "//iam.googleapis.com/projects/1/locations/global/"
                "workloadIdentityPools/evidencia/providers/tests",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": f"{server.url}/token",
                "credential_source": {"file": str(subject)},
            }
        )
    )
    configure(
        GEMINI_API_KEY=None,
        GOOGLE_API_KEY=None,
        GOOGLE_GENAI_USE_VERTEXAI="true",
        GOOGLE_CLOUD_PROJECT="demo-evidencia",
        GOOGLE_CLOUD_LOCATION="global",
        GOOGLE_APPLICATION_CREDENTIALS=str(credentials),
        GEMINI_MODEL=model,
    )
