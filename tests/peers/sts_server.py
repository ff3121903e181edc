#!/usr/bin/env python3
"""An OAuth authorization server on loopback for the backend-credentials tests (issue 35), run under .venv-sts:
authlib 1.9.10's Flask AuthorizationServer with the client-credentials grant (RFC 6749 §4.4) issuing RFC 9068 JWT
access tokens (RS256, a key made at start).

Usage: sts_server.py --port P --public-key-out FILE --secrets-file FILE [--expires-in S] [--client-id ID]
                     [--private-key FILE]

  POST /token   grant_type=client_credentials, client authentication by HTTP Basic or in the form
                (client_secret_basic, client_secret_post); `scope` (granted if within "mcp tools"), `audience`
                (the token's `aud`; `resource` is taken when no audience is given). The client secret is checked
                against the lines of --secrets-file, read at each request (a test rotates by adding a line).
  GET  /stats   {"tokens": n issued, "refused": n, "secrets": [sha256 of the secret of each issued token, in order],
                "audiences": [...]}: what the gateway asked for, without any secret in the clear.
  --expires-in  the tokens' lifetime in seconds (default 300).
--private-key keeps the signing key across a restart (the tests stop and start the server on its port). The public
key is written (PEM) to --public-key-out before READY, for backends that check the tokens
(peer_serve.py --require-token). Prints "READY <port>" once serving.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import threading

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from cryptography.hazmat.primitives import serialization
from flask import Flask, jsonify, request
from joserfc.jwk import RSAKey
from werkzeug.serving import make_server

ALLOWED_SCOPES = {"mcp", "tools"}


class Client(ClientMixin):
    def __init__(self, client_id: str, secrets_file: str) -> None:
        self.client_id = client_id
        self.secrets_file = secrets_file

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return ""

    def get_allowed_scope(self, scope: str) -> str:
        if not scope:
            return ""
        return " ".join(s for s in scope.split() if s in ALLOWED_SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        with open(self.secrets_file, encoding="utf-8") as f:
            accepted = {line.strip() for line in f if line.strip()}
        ok = client_secret in accepted
        if ok:
            STATS["secrets"].append(hashlib.sha256(client_secret.encode()).hexdigest())
        return ok

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "client_credentials"


STATS: dict = {"tokens": 0, "refused": 0, "secrets": [], "audiences": []}
LOCK = threading.Lock()


def build(args: argparse.Namespace, key: RSAKey) -> Flask:
    app = Flask("sts")
    client = Client(args.client_id, args.secrets_file)
    jwks = {"keys": [key.as_dict(private=True)]}

    class Tokens(JWTBearerTokenGenerator):
        def get_jwks(self):
            return jwks

        def get_audiences(self, client, user, scope):
            return request.form.get("audience") or request.form.get("resource") or "default"

    server = AuthorizationServer(
        app,
        query_client=lambda cid: client if cid == client.client_id else None,
        save_token=lambda token, req: None,
    )
    generator = Tokens(issuer="http://127.0.0.1/sts", alg="RS256")
    server.register_token_generator("default", generator)
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"client_credentials": args.expires_in}
    generator._get_expires_in = lambda client, grant_type: args.expires_in  # noqa: SLF001

    class ClientCredentials(grants.ClientCredentialsGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    server.register_grant(ClientCredentials)

    @app.post("/token")
    def token():
        with LOCK:
            resp = server.create_token_response()
            if resp.status_code == 200:
                STATS["tokens"] += 1
                STATS["audiences"].append(request.form.get("audience"))
            else:
                STATS["refused"] += 1
            return resp

    @app.get("/stats")
    def stats():
        with LOCK:
            return jsonify(STATS)

    return app


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--public-key-out", required=True)
    p.add_argument("--secrets-file", required=True)
    p.add_argument("--expires-in", type=int, default=300)
    p.add_argument("--client-id", default="gw")
    p.add_argument("--private-key", help="the signing key (PEM): loaded if the file exists, else made and saved there")
    args = p.parse_args()
    if args.private_key and os.path.exists(args.private_key):
        with open(args.private_key, "rb") as f:
            key = RSAKey.import_key(f.read())
    else:
        key = RSAKey.generate_key(2048)
        if args.private_key:
            with open(args.private_key, "wb") as f:
                f.write(key.as_pem(private=True))
    pem = key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with open(args.public_key_out, "wb") as f:
        f.write(pem)
    server = make_server("127.0.0.1", args.port, build(args, key), threaded=True)
    print(f"READY {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
