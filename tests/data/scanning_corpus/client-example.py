"""Example client for the Acme API. Replace the placeholders before running."""
import os

import requests

API_KEY = os.environ.get("ACME_API_KEY", "YOUR_API_KEY")
BASE_URL = "https://api.example.com/v2"
SECRET_NAME = "acme/prod/api-key"
stripe_key = "sk_test_XXXXXXXXXXXXXXXXXXXXXXXX"
openai_key = "sk-..."  # set OPENAI_API_KEY instead
token = None


def headers(api_key: str = API_KEY) -> dict:
    return {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}


def list_reports(session: requests.Session, page_token: str | None = None) -> dict:
    params = {"page_token": page_token} if page_token else {}
    answer = session.get(f"{BASE_URL}/reports", headers=headers(), params=params, timeout=10)
    answer.raise_for_status()
    return answer.json()


if __name__ == "__main__":
    password = os.environ["DB_PASSWORD"]
    auth_header = headers()["Authorization"]
    print(list_reports(requests.Session()))
