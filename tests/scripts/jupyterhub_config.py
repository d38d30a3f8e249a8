"""JupyterHub as tests/test_hub.py runs it: on loopback, one Unix account per person.

Every value comes from the environment the test starts the hub with (HUB_*), so this file is
the whole configuration and the test only chooses ports, folders and accounts.
"""

import os

c = get_config()  # noqa: F821 - provided by jupyterhub

env = os.environ
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(env["HUB_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env["HUB_INTERNAL_PORT"])
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{env['HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [env["HUB_PROXY"]]
c.JupyterHub.db_url = f"sqlite:///{env['HUB_STATE']}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{env['HUB_STATE']}/jupyterhub_cookie_secret"
c.JupyterHub.cleanup_servers = True

# A fixed password for the test's own accounts, and nobody else may log in.
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = env["HUB_PASSWORD"]
c.Authenticator.allowed_users = set(env["HUB_USERS"].split())

# Each user's server runs as that Unix user (the hub is root), from the students' environment
# and nothing else: its PATH, its interpreter, its Jupyter config folder.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [f"{env['HUB_STUDENT_ENV']}/bin/jupyterhub-singleuser"]
c.Spawner.env_keep = ["LANG"]
c.Spawner.environment = {"PATH": f"{env['HUB_STUDENT_ENV']}/bin:/usr/bin:/bin", "MPLBACKEND": "Agg"}
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.news_url=None",
                  "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.start_timeout = int(env["HUB_START_TIMEOUT"])
c.Spawner.http_timeout = int(env["HUB_START_TIMEOUT"])

# The test drives the hub's REST API with a service token that may start servers and reach them.
c.JupyterHub.services = [{"name": "course-test", "api_token": env["HUB_API_TOKEN"]}]
c.JupyterHub.load_roles = [{
    "name": "course-test",
    "scopes": ["admin:users", "admin:servers", "access:servers", "tokens"],
    "services": ["course-test"],
}]
