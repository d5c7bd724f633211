"""Secrets as they appear in repositories, and text that only resembles them.

Every value is fake but has its provider's real format (length, alphabet, prefix), so the
rules meet what they would meet in the wild. ``LEAKS`` must all be redacted, ``NEAR_MISSES``
must come back unchanged (they are what a repository map is made of), ``SECRET_PATHS`` must
be refused and ``READABLE_PATHS`` must not. scripts/bench_redact.py builds its text from them.
"""

import base64
import hashlib

from tests import samples_hostile as hostile


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


AZURE_KEY = base64.b64encode(hashlib.sha512(b"planted-azure").digest()).decode()  # 88 chars
BASIC = base64.b64encode(b"deploy:Pl4nted-basic-pw").decode()
HF_TOKEN = "hf_PlantedFakeHuggingFaceTokenAbCdEfG"
SENDGRID = "SG.PlantedFakeSendGrid012.Pl4ntedFakeSendGridSecret0123456789abcdefgh"
DO_TOKEN = "dop_v1_" + _hex("planted-do", 64)
GRAFANA = "glsa_PlantedFakeGrafana0123456789abcd_" + _hex("planted-grafana", 8)
PYPI = "pypi-AgEIcHlwaS5vcmc" + "CJDk1OTc0ZGQ4LWVmNjctNGI4Mi05Plantedfake0123456789abcdefghij"
DB_PASS = "Pl4ntedDbPass99"
PASSPHRASE = "Xk9-mPq2-vL7w-Planted"
SPACED_PASSPHRASE = "Planted horse battery staple 42"
PHP_PASSWORD = "Pl4nted-PHP-pw!"

# (case, text, the value that must not survive)
LEAKS = [
    (
        "azure-storage",
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE_KEY};"
        "EndpointSuffix=core.windows.net",
        AZURE_KEY,
    ),
    ("basic-header", f"Authorization: Basic {BASIC}", BASIC),
    ("basic-header-js", f"headers: {{ 'Authorization': 'Basic {BASIC}' }}", BASIC),
    ("huggingface", f'HF_TOKEN = "{HF_TOKEN}"', HF_TOKEN),
    ("sendgrid", f"sendgrid.setApiKey('{SENDGRID}');", SENDGRID),
    ("digitalocean", f"export DIGITALOCEAN_ACCESS_TOKEN={DO_TOKEN}", DO_TOKEN),
    ("grafana", f"grafana_sa: {GRAFANA}", GRAFANA),
    ("pypi", f"[pypi]\nusername = __token__\npassword = {PYPI}\n", PYPI),
    ("db-pass", f"DB_PASS={DB_PASS}", DB_PASS),
    ("passphrase", f"passphrase: {PASSPHRASE}", PASSPHRASE),
    ("passphrase-spaced", f'GPG_PASSPHRASE="{SPACED_PASSPHRASE}"', SPACED_PASSPHRASE),
    ("php-define", f"define('DB_PASSWORD', '{PHP_PASSWORD}');", PHP_PASSWORD),
    # what the hand-written rules caught, and the hostile repository's planted values
    ("aws-key-id", f'const id = "{hostile.AWS_KEY_ID}";', hostile.AWS_KEY_ID),
    ("aws-secret", f"aws_secret_access_key = {hostile.AWS_SECRET}", hostile.AWS_SECRET),
    ("github", f"token = '{hostile.GITHUB_TOKEN}'", hostile.GITHUB_TOKEN),
    ("stripe", f"stripe = {hostile.STRIPE_KEY}", hostile.STRIPE_KEY),
    ("slack", f"{{ token: '{hostile.SLACK_TOKEN}' }}", hostile.SLACK_TOKEN),
    ("npm", f"//registry.npmjs.org/:_authToken={hostile.NPM_TOKEN}", hostile.NPM_TOKEN),
    ("gitlab", "GITLAB_TOKEN=glpat-PlantedFake0123456789", "glpat-PlantedFake0123456789"),
    ("url-password", f"postgres://app:{hostile.DB_PASSWORD}@db:5432/app", hostile.DB_PASSWORD),
    ("mongo-url", f"mongodb://admin:{hostile.MONGO_PASSWORD}@mongo/x", hostile.MONGO_PASSWORD),
    ("jwt-secret", f'const jwtSecret = "{hostile.JWT_SECRET}";', hostile.JWT_SECRET),
    ("private-key", hostile.PRIVATE_KEY, hostile.KEY_MATERIAL),
    ("private-key-cut", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt", "b3BlbnNz"),
    (
        "slack-webhook",
        "hook = 'https://hooks.slack.com/services/T0PLANTED/B0PLANTED1/Pl4ntedFakeWebhook0123ab'",
        "Pl4ntedFakeWebhook0123",
    ),
]

NEAR_MISSES = [
    "const token = req.headers.authorization;",
    "password: process.env.DB_PASSWORD,",
    "api_key = os.environ['API_KEY']",
    "secret: ${{ secrets.DEPLOY_KEY }}",
    'const passwordInput = page.getByLabel("Password");',
    '"version": "1.2.3", "token": "<your token here>"',
    "AUTH_URL=https://example.com/login",
    "apiKey: '',",
    "password = 'changeme'",
    "postgres://user:${DB_PASSWORD}@localhost/app",
    'it("rejects a wrong password", async () => {});',
    "app.get('/api/tasks/:id', handler)",
    "headers: { Authorization: `Bearer ${token}` },",
    "headers: { Authorization: 'Bearer ' + token },",
    "Authorization: Bearer <token>",
    "const DB_PASS = process.env.DB_PASS;",
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));",
    "passphrase: ${{ secrets.GPG_PASSPHRASE }}",
    'const secretSanta = pickPairs(friends, "secret santa");',
    "bypass = true; compass = 'north';",
    # identifiers that look random: a repository map is full of them
    'id: "3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65",',
    "commit 71e7ff1c0a4b9e2f3d5c6b7a8e9f0d1c2b3a4f5e",
    "merge: 71e7ff1c0a4b9e2f3d5c6b7a8e9f0d1c2b3a4f5e",
    '"integrity": "sha512-PlAnTeD0fAkE+HaShOfAlOcKfIlEeNtRy1234567890abcdefghijklmnopqrstuvwxyzABCDE==",',
    '"resolved": "https://registry.npmjs.org/react/-/react-18.3.1.tgz",',
    "sha256:3b1e7a5f0c2d4e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f",
    '<link rel="stylesheet" href="/assets/index-4f9c2a1b.css" integrity="sha384-AbC12">',
    "const KEY_CODES = { Enter: 13, Escape: 27 };",
    "export const tokenize = (s) => s.split(/\\s+/);",
    'const route = "/api/v1/accounts/:accountId/keys";',
]

SECRET_PATHS = [
    # named in the issue that broadened the deny-list
    "prod.env",
    ".env-local",
    ".env_prod",
    ".dev.vars",
    "secrets.yaml",
    ".streamlit/secrets.toml",
    "credentials.json",
    "key.der",
    "server.key.bak",
    ".yarnrc",
    ".s3cfg",
    ".boto",
    "kubeconfig",
    # and what the deny-list held before
    ".env",
    ".env.production",
    "api/.env.local",
    ".envrc",
    "deploy/id_rsa",
    "deploy/id_rsa.pub",
    "keys/id_ed25519",
    "certs/server.pem",
    "certs/server.key",
    "config/.npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    ".aws/credentials",
    "home/.ssh/config",
    "android/app/release.keystore",
    "android/app/upload.jks",
    "ios/dist.p12",
    "ios/cert.pfx",
    "ios/AuthKey_ABC123.p8",
    "infra/prod.tfvars",
    "infra/terraform.tfstate",
    "CERTS/SERVER.PEM",
    # and their kin
    "config/client_secret_123.apps.googleusercontent.com.json",
    "deploy/gcp-service-account.json",
    "config/secrets",
    "config/credentials.yml.enc",
    ".env.bak",
    "id_rsa~",
    "ops/kubeconfig-prod",
    "ops/cluster.kubeconfig",
    ".docker/config.json",
    "vpn/office.ovpn",
]

READABLE_PATHS = [
    "package.json",
    "src/env.ts",
    "docs/environment.md",
    "src/keyboard.js",
    "src/keys.ts",
    "config/settings.py",
    "src/auth/token.js",
    "ssh/README.md",
    # source code and documentation named after secrets: code the tests may need
    "src/secrets.ts",
    "secret_santa.py",
    "src/credentials/LoginForm.tsx",
    "docs/credentials.md",
    "app/services/secret_manager.rb",
    "src/environment.ts",
    "src/keyboard.keymap.js",
]
