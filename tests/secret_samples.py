"""One sample of every secret shape the redaction rules know, shared by the leak and bundle tests."""

from __future__ import annotations

SHAPED: dict[str, str] = {
    "AWS Access Key": "AKIA" + "Q7" * 8,
    "GitHub Token": "ghp_" + "a1" * 18,
    "GitLab Token": "glpat-" + "Gx" * 11,
    "Slack Token": "xoxb-" + "1234567890-" + "0987654321-" + "fakefakefake",
    "Stripe Access Key": "rk_live_" + "Zz" * 12,
    "JSON Web Token": "eyJ" + "hbGciOiJub25lIn0" + ".eyJ" + "zdWIiOiJmYWtlIn0" + "." + "c2ln" * 8,
    "OpenAI Token": "sk-proj" + "A" * 20 + "T3BlbkFJ" + "B" * 20,
    "Anthropic API key": "sk-ant-api03-" + "Cq" * 20,
    "sk- style API key": "sk-" + "Dd" * 12,
    "Google-style API key": "AIza" + "Sy" * 17 + "E",
    "SendGrid API Key": "SG." + "a" * 22 + "." + "b" * 43,
    "Twilio API Key": "SK" + "0123456789abcdef" * 2,
    "Discord Bot Token": "M" + "d" * 23 + "." + "e" * 6 + "." + "f" * 27,
    "Telegram Bot Token": "123456789:" + "T" * 35,
    "Mailchimp Access Key": "0123456789abcdef" * 2 + "-us12",
    "PyPI Token": "pypi-AgEIcHlwaS5vcmc" + "p" * 70,
    "Square OAuth Secret": "sq0csp-" + "q" * 43,
    "Azure Storage Account access key": "AccountKey=" + "k" * 88,
    "NPM tokens": "//registry.npmjs.org/:_authToken=npm_" + "n" * 36,
    "Private Key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE" + "Pk" * 30 + "\n-----END RSA PRIVATE KEY-----",
}
