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
                grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693, registered on the same server):
                the subject token (an RS256 JWT of --subject-issuer, checked with --subject-key) exchanged for a token
                of `audience` (one of --audiences, else invalid_target) whose `sub` is the subject's; an actor token
                this server issued becomes `act: {"sub": ...}` (delegation).
  GET  /stats   {"tokens": n issued, "refused": n, "secrets": [sha256 of the secret of each issued token, in order],
                "audiences": [...], "exchanges": [{"sub", "act"}...], "refusals": [error codes]}: what the gateway
                asked for, without any secret in the clear.
  --expires-in  the tokens' lifetime in seconds (default 300; a fraction such as 1e-9 is answered as given).
--private-key keeps the signing key across a restart (the tests stop and start the server on its port). The public
key is written (PEM) to --public-key-out before READY, for backends that check the tokens
(peer_serve.py --require-token). Prints "READY <port>" once serving.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
import threading

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError, OAuth2Error
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from cryptography.hazmat.primitives import serialization
from flask import Flask, jsonify, request
from joserfc import jwt as jose_jwt
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
        return grant_type in ("client_credentials", TOKEN_EXCHANGE)


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


class InvalidTargetError(OAuth2Error):
    """RFC 8693 §2.2.2: the audience asked for is not one this server issues tokens for."""

    error = "invalid_target"


class Subject:
    def __init__(self, sub: str) -> None:
        self.sub = sub

    def get_user_id(self) -> str:
        return self.sub


STATS: dict = {"tokens": 0, "refused": 0, "secrets": [], "audiences": [], "exchanges": [], "refusals": []}
LOCK = threading.Lock()


def build(args: argparse.Namespace, key: RSAKey) -> Flask:
    app = Flask("sts")
    client = Client(args.client_id, args.secrets_file)
    jwks = {"keys": [key.as_dict(private=True)]}

    subject_key = None
    if args.subject_key:
        with open(args.subject_key, "rb") as f:
            subject_key = RSAKey.import_key(f.read())
    allowed = set(args.audiences.split(",")) if args.audiences else None

    class Tokens(JWTBearerTokenGenerator):
        def get_jwks(self):
            return jwks

        def get_audiences(self, client, user, scope):
            return request.form.get("audience") or request.form.get("resource") or "default"

        def get_extra_claims(self, client, grant_type, user, scope):
            act = getattr(request, "sts_act", None)
            return {"act": act} if act else {}

    class TokenExchangeGrant(grants.BaseGrant, grants.TokenEndpointMixin):
        """RFC 8693: the subject token (a JWT of --subject-issuer, checked with --subject-key) exchanged for a token
        of the audience asked for (one of --audiences), whose `sub` is the subject's; an actor token (one this server
        issued) becomes `act: {sub}`."""

        GRANT_TYPE = TOKEN_EXCHANGE
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

        def validate_token_request(self):
            client = self.authenticate_token_endpoint_client()
            form = request.form
            if form.get("subject_token_type") != ACCESS_TOKEN or not form.get("subject_token"):
                raise InvalidRequestError("subject_token of type access_token required")
            try:
                subject = jose_jwt.decode(form["subject_token"], subject_key)
            except Exception as e:  # noqa: BLE001 - any undecodable token is the same refusal
                raise InvalidGrantError(f"the subject token is not valid: {type(e).__name__}") from None
            claims = subject.claims
            if claims.get("iss") != args.subject_issuer or int(claims.get("exp", 0)) < int(time.time()):
                raise InvalidGrantError("the subject token is not valid")
            audience = form.get("audience")
            if allowed is not None and audience not in allowed:
                raise InvalidTargetError(f"no tokens for {audience}")
            if form.get("actor_token"):
                try:
                    actor = jose_jwt.decode(form["actor_token"], key)
                except Exception:  # noqa: BLE001
                    raise InvalidGrantError("the actor token is not valid") from None
                request.sts_act = {"sub": actor.claims.get("sub")}
            self.request.client = client
            self.request.user = Subject(str(claims["sub"]))
            self.validate_requested_scope()

        def create_token_response(self):
            token = self.generate_token(
                user=self.request.user, scope=self.request.payload.scope, include_refresh_token=False
            )
            token["issued_token_type"] = ACCESS_TOKEN
            STATS["exchanges"].append({"sub": self.request.user.sub, "act": getattr(request, "sts_act", None)})
            return 200, token, self.TOKEN_RESPONSE_HEADER

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
    server.register_grant(TokenExchangeGrant)

    @app.post("/token")
    def token():
        with LOCK:
            resp = server.create_token_response()
            if resp.status_code == 200:
                STATS["tokens"] += 1
                STATS["audiences"].append(request.form.get("audience"))
            else:
                STATS["refused"] += 1
                STATS["refusals"].append(resp.get_json().get("error") if resp.is_json else None)
            return resp

    @app.get("/stats")
    def stats():
        with LOCK:
            return jsonify(STATS)

    return app


def lifetime(text: str) -> int | float:
    """--expires-in: whole seconds as an integer, a fraction (down to 1e-9) as it is given."""
    value = float(text)
    return int(value) if value.is_integer() else value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--public-key-out", required=True)
    p.add_argument("--secrets-file", required=True)
    p.add_argument("--expires-in", type=lifetime, default=300)
    p.add_argument("--client-id", default="gw")
    p.add_argument("--subject-key", help="token exchange: the public key (PEM) subject tokens are signed with")
    p.add_argument("--subject-issuer", default="https://idp.example.com", help="... and their issuer")
    p.add_argument("--audiences", help="token exchange: the audiences it issues tokens for, comma separated (any if unset)")
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
