"""Where s3:// requests find their credentials, side by side with the AWS CLI (Debian's awscli): for each
setup, microbatch reads an object exactly when the AWS CLI can (`aws s3api head-object`), against an S3 server
that refuses anonymous requests and checks session tokens (servers.s3), with STS, the container endpoint and
instance metadata faked on 127.0.0.1 (aws_fakes). No request leaves the machine: every setup points the
instance metadata service at the fake or at a closed loopback port, and the AWS CLI is run only where it can
be pointed at the fakes (Debian's awscli 2.9 has no STS endpoint setting and no container token file).

With MB_CREDENTIAL_TABLE set, each case appends its row (setup, the AWS CLI's result, microbatch's) there."""

import dataclasses
import os
import shutil
import stat
import subprocess

import h5py
import numpy as np
import pytest

import servers
from aws_fakes import aws_fakes
from conftest import ENV, run

AWS = "/usr/bin/aws"  # Debian's awscli (scripts/install-deps.sh); the pip one is another program
KEY = "creds/in.h5"


@dataclasses.dataclass
class World:
    s3: servers.S3
    fakes: object


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "in.h5"
    with h5py.File(src, "w") as f:
        f["x"] = np.arange(40, dtype="<i4").reshape(20, 2)
    with servers.s3() as s3, aws_fakes(s3) as fakes:
        s3.put(src, KEY)
        s3.put(src, KEY, bucket=servers.S3_PUBLIC_BUCKET)
        yield World(s3, fakes)


class Setup:
    """One credential setup: a home with ~/.aws of its own, the variables, files, and what to ask."""

    def __init__(self, world, home):
        self.world, self.home = world, home
        os.makedirs(home / ".aws", exist_ok=True)
        self.env = servers.aws_isolated(ENV)
        for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
            del self.env[name]  # the home's own files
        self.env.update(HOME=str(home), AWS_REGION="us-east-1", AWS_ENDPOINT_URL=world.s3.endpoint,
                        AWS_ENDPOINT_URL_STS=world.fakes.endpoint + "/sts/", AWS_PAGER="",
                        AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:9/")  # nothing listens
        self.bucket = servers.S3_BUCKET
        self.unsigned = False

    def write(self, name, text):
        path = self.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    def helper(self, creds, status=0):
        """A credential_process printing `creds` (servers.S3.issue's, whose Token is a SessionToken here) and
        exiting with `status`."""
        named = {"SessionToken" if k == "Token" else k: v for k, v in creds.items()}
        doc = "{" + ", ".join(f'"{k}": "{v}"' for k, v in named.items()) + ', "Version": 1}'
        path = self.write("bin/creds-helper", f"#!/bin/sh\necho '{doc}'\nexit {status}\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def microbatch(self):
        name = self.world.s3.s3_url(KEY, bucket=self.bucket)
        args = ["inspect", name] + (["--no-sign-request"] if self.unsigned else [])
        return run(*args, env=self.env)

    def aws_cli(self):
        args = [AWS, "--endpoint-url", self.world.s3.endpoint, "s3api", "head-object", "--bucket", self.bucket,
                "--key", KEY] + (["--no-sign-request"] if self.unsigned else [])
        env = {k: v for k, v in self.env.items() if k != "AWS_ENDPOINT_URL"}  # 2.9 does not read it; 2.13 would
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)


def keys(s3_key=servers.S3_KEY_ID, secret=servers.S3_SECRET, profile="default", prefix=""):
    return f"[{prefix}{profile}]\naws_access_key_id = {s3_key}\naws_secret_access_key = {secret}\n"


WRONG = "mbWrong/Secret+zyxwvutsrqponmlkjihgfedcba"


def env_keys(s):
    s.env.update(AWS_ACCESS_KEY_ID=servers.S3_KEY_ID, AWS_SECRET_ACCESS_KEY=servers.S3_SECRET)


def env_wrong_secret(s):
    s.env.update(AWS_ACCESS_KEY_ID=servers.S3_KEY_ID, AWS_SECRET_ACCESS_KEY=WRONG)


def env_temporary(s):
    c = s.world.s3.issue()
    s.env.update(AWS_ACCESS_KEY_ID=c["AccessKeyId"], AWS_SECRET_ACCESS_KEY=c["SecretAccessKey"],
                 AWS_SESSION_TOKEN=c["Token"])


def env_temporary_wrong_token(s):
    env_temporary(s)
    s.env["AWS_SESSION_TOKEN"] += "x"


def nothing(s):
    pass


def default_profile(s):
    s.write(".aws/credentials", keys())


def named_profile(s):
    s.write(".aws/credentials", keys(secret=WRONG) + keys(profile="dev"))
    s.env["AWS_PROFILE"] = "dev"


def config_default(s):
    s.write(".aws/config", keys())


def config_named(s):
    s.write(".aws/config", keys(profile="dev", prefix="profile "))
    s.env["AWS_PROFILE"] = "dev"


def credentials_file_variable(s):
    s.env["AWS_SHARED_CREDENTIALS_FILE"] = s.write("elsewhere/creds", keys())


def config_file_variable(s):
    s.env["AWS_CONFIG_FILE"] = s.write("elsewhere/conf", keys(profile="team", prefix="profile "))
    s.env["AWS_PROFILE"] = "team"


def credentials_file_before_config(s):
    s.write(".aws/credentials", keys())
    s.write(".aws/config", keys(secret=WRONG))


def environment_before_profile(s):
    s.write(".aws/credentials", keys(secret=WRONG))
    env_keys(s)


def missing_profile(s):
    s.write(".aws/credentials", keys())
    s.env["AWS_PROFILE"] = "nosuch"


def wrong_secret_in_profile(s):
    s.write(".aws/credentials", keys(secret=WRONG))


def profile_region(s):
    s.write(".aws/credentials", keys())
    s.write(".aws/config", "[default]\nregion = eu-west-3\n")
    del s.env["AWS_REGION"]


def credential_process(s):
    s.write(".aws/config", f"[default]\ncredential_process = {s.helper(s.world.s3.issue())}\n")


def failing_process(s):
    s.write(".aws/config", f"[default]\ncredential_process = {s.helper({}, status=3)}\n")


def role_with_source_profile(s):
    s.write(".aws/credentials", keys(profile="base"))
    s.write(".aws/config", "[default]\nrole_arn = arn:aws:iam::123456789012:role/mb\nsource_profile = base\n")


def role_with_environment_source(s):
    env_keys(s)
    s.write(".aws/config", "[default]\nrole_arn = arn:aws:iam::123456789012:role/mb\n"
                           "credential_source = Environment\n")


def web_identity_environment(s):
    s.env.update(AWS_WEB_IDENTITY_TOKEN_FILE=s.write("token", s.world.fakes.web_token),
                 AWS_ROLE_ARN="arn:aws:iam::123456789012:role/eks", AWS_ROLE_SESSION_NAME="mb-test")


def web_identity_profile(s):
    s.write(".aws/config", f"[default]\nweb_identity_token_file = {s.write('token', s.world.fakes.web_token)}\n"
                           "role_arn = arn:aws:iam::123456789012:role/eks\n")


def container(s):
    s.env.update(AWS_CONTAINER_CREDENTIALS_FULL_URI=s.world.fakes.endpoint + "/container/credentials",
                 AWS_CONTAINER_AUTHORIZATION_TOKEN=s.world.fakes.container_token)


def container_token_file(s):
    s.env.update(AWS_CONTAINER_CREDENTIALS_FULL_URI=s.world.fakes.endpoint + "/container/credentials",
                 AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=s.write("container-token", s.world.fakes.container_token))


def instance_metadata(s):
    s.env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = s.world.fakes.endpoint + "/"  # awscli 2.9 wants the slash


def instance_metadata_disabled(s):
    instance_metadata(s)
    s.env["AWS_EC2_METADATA_DISABLED"] = "true"


def public_unsigned(s):
    s.bucket, s.unsigned = servers.S3_PUBLIC_BUCKET, True


def private_unsigned(s):
    s.unsigned = True


# (setup, microbatch reads the object, what its error says when not, whether the AWS CLI can be compared)
CASES = [
    ("environment keys", env_keys, True, None, True),
    ("environment keys, wrong secret", env_wrong_secret, False, "403", True),
    ("environment temporary keys and session token", env_temporary, True, None, True),
    ("environment temporary keys, wrong session token", env_temporary_wrong_token, False, "403", True),
    ("no credentials anywhere", nothing, False, "no AWS credentials", True),
    ("[default] in ~/.aws/credentials", default_profile, True, None, True),
    ("AWS_PROFILE=dev in ~/.aws/credentials", named_profile, True, None, True),
    ("[default] keys in ~/.aws/config", config_default, True, None, True),
    ("AWS_PROFILE=dev, [profile dev] keys in ~/.aws/config", config_named, True, None, True),
    ("AWS_SHARED_CREDENTIALS_FILE", credentials_file_variable, True, None, True),
    ("AWS_CONFIG_FILE with AWS_PROFILE", config_file_variable, True, None, True),
    ("credentials file wins over config", credentials_file_before_config, True, None, True),
    ("environment wins over the profile", environment_before_profile, True, None, True),
    ("AWS_PROFILE names no profile", missing_profile, False, "AWS_PROFILE", True),
    ("wrong secret in the profile", wrong_secret_in_profile, False, "credentials from profile default in", True),
    ("the profile's region", profile_region, True, None, True),
    ("credential_process", credential_process, True, None, True),
    ("credential_process that fails", failing_process, False, "credential_process of profile default", True),
    ("role_arn + source_profile (STS AssumeRole)", role_with_source_profile, True, None, False),
    ("role_arn + credential_source = Environment", role_with_environment_source, True, None, False),
    ("web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN)", web_identity_environment, True, None, False),
    ("web identity in the profile", web_identity_profile, True, None, False),
    ("container (FULL_URI + AUTHORIZATION_TOKEN)", container, True, None, True),
    ("container (AUTHORIZATION_TOKEN_FILE)", container_token_file, True, None, False),
    ("instance metadata (IMDSv2)", instance_metadata, True, None, True),
    ("instance metadata disabled", instance_metadata_disabled, False, "no AWS credentials", True),
    ("--no-sign-request, public bucket", public_unsigned, True, None, True),
    ("--no-sign-request, private bucket", private_unsigned, False, "403", True),
]


def record(row):
    table = os.environ.get("MB_CREDENTIAL_TABLE")
    if table:
        with open(table, "a") as f:
            f.write(" | ".join(row) + "\n")


@pytest.mark.parametrize("name,arrange,reads,says,comparable", CASES, ids=[c[0] for c in CASES])
def test_credentials_as_the_aws_cli_finds_them(world, tmp_path, name, arrange, reads, says, comparable):
    s = Setup(world, tmp_path / "home")
    arrange(s)
    res = s.microbatch()
    if reads:
        assert res.code == 0, res
    else:
        assert res.code in (1, 2), res
        assert says in res.err, res
        assert len(res.err.strip().splitlines()) == 1, res
    for secret in (servers.S3_SECRET, WRONG, "temporary/secret+"):
        assert secret not in res.err + res.out, res
    cli = "n/a"
    if comparable:
        assert os.path.exists(AWS), "Debian's awscli is missing: scripts/install-deps.sh installs it"
        done = s.aws_cli()
        assert (done.returncode == 0) == reads, (done.returncode, done.stderr)
        cli = "reads" if done.returncode == 0 else "refused"
    record([name, cli, "reads" if reads else f"refused (exit {res.code})"])


def test_no_credentials_names_the_profiles_the_files_hold_and_how_to_pick_one(world, tmp_path):
    # The default profile is not there; [lab] is: the error says so, and the way it says works.
    s = Setup(world, tmp_path / "home")
    s.write(".aws/credentials", keys(profile="lab"))
    s.write(".aws/config", "[profile prod]\nregion = us-east-1\n[sso-session corp]\nsso_region = us-east-1\n")
    res = s.microbatch()
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res
    assert "no AWS credentials" in res.err, res
    assert "profiles lab, prod are in those files too: pick one with AWS_PROFILE=lab" in res.err, res
    assert "corp" not in res.err, res
    s.env["AWS_PROFILE"] = "lab"
    assert s.microbatch().code == 0


def test_a_misspelt_aws_profile_gets_did_you_mean(world, tmp_path):
    s = Setup(world, tmp_path / "home")
    s.write(".aws/credentials", keys(profile="lab") + keys(profile="production"))
    s.env["AWS_PROFILE"] = "labb"
    res = s.microbatch()
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res
    assert 'the profile "labb" is in neither' in res.err and "did you mean lab?" in res.err, res
    s.env["AWS_PROFILE"] = "staging"  # nothing close: the profiles there are listed
    res = s.microbatch()
    assert res.code == 2 and "the profiles there: lab, production" in res.err, res


def test_a_role_is_assumed_with_its_source_profiles_signed_request(world, tmp_path):
    # The fake STS verifies the AssumeRole request's Signature V4 against the source profile's secret.
    s = Setup(world, tmp_path / "home")
    role_with_source_profile(s)
    before = world.fakes.count("AssumeRole")
    res = s.microbatch()
    assert res.code == 0, res
    assert world.fakes.count("AssumeRole") == before + 1
    _, detail = [c for c in world.fakes.calls if c[0] == "AssumeRole"][-1]
    assert detail["signer"] == servers.S3_KEY_ID
    assert detail["role"] == "arn:aws:iam::123456789012:role/mb"
    # and a chain of roles that loops is refused before any request
    s.write(".aws/config", "[default]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
                           "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = default\n")
    res = s.microbatch()
    assert res.code == 2 and "loops back" in res.err, res


def test_minus_v_says_which_source_gave_the_credentials(world, tmp_path):
    s = Setup(world, tmp_path / "home")
    default_profile(s)
    res = run("inspect", world.s3.s3_url(KEY), "-v", env=s.env)
    assert res.code == 0, res
    assert f"credentials from profile default in {tmp_path / 'home' / '.aws' / 'credentials'}" in res.err, res
    assert servers.S3_SECRET not in res.err


def test_temporary_credentials_are_fetched_again_before_they_expire(world, tmp_path):
    # Credentials 5 minutes from their expiry are inside the refresh window: every request fetches them again,
    # and each request is signed with the newest (the server refuses a token it did not issue with the key).
    s = Setup(world, tmp_path / "home")
    container(s)
    world.fakes.lifetime = 300
    try:
        before = world.fakes.count("container")
        res = s.microbatch()
        assert res.code == 0, res
        assert world.fakes.count("container") - before >= 2  # when the name was resolved, and at its request
        # and in the uploading process of a split onto S3, which signs its own requests
        before = world.fakes.count("container")
        out = world.s3.s3_url("refreshed/")
        res = run("split", world.s3.s3_url(KEY), "-n", 4, "--allow-copies", "-o", out, env=s.env)
        assert res.code == 0, res
        assert world.fakes.count("container") - before >= 6  # the listing, 4 files, the manifest at least
        res = run("verify", out, env=s.env)
        assert res.code == 0, res
    finally:
        world.fakes.lifetime = 3600
