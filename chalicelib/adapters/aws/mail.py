"""Mail through Amazon SES v2 (the deployed stack): `SendEmail` with the raw
RFC 5322 message (the same bytes the other adapters send). The sender
(`DOCPUB_MAIL_FROM`) must be an identity verified in SES; the function's IAM
policy allows sending from that identity only (infra/resources.yaml)."""
from __future__ import annotations

from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.mail.message import rfc5322
from chalicelib.ports.mail import MailUndeliverable, OutgoingMail


class SesMailer:
    def __init__(self, sender: str):
        self.sender = sender

    def send(self, message: OutgoingMail) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        data = rfc5322(message, self.sender).as_bytes()
        try:
            aws.ses().send_email(FromEmailAddress=self.sender, Destination={"ToAddresses": [message.to]},
                                 Content={"Raw": {"Data": data}})
        except (ClientError, BotoCoreError) as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
            raise MailUndeliverable(f"SES refused the message: {code}") from exc
