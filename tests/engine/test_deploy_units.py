"""The several-host recipe's files under deploy/: each systemd unit's command names a real entry
point with options its own parser takes, each setting in the two luigi.cfg files is one Luigi or
docketeer reads, systemd finds nothing to say about the units, and docs/OPERATING.md points at
every file. (tests/engine/test_worker_hosts.py runs hosts with these very cfg files.)"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import luigi
import luigi.interface
import luigi.retcodes
import luigi.scheduler
import luigi.worker
import pytest
from luigi.cmdline_parser import CmdlineParser

from pipeline.config import LUIGI_DEFAULTS, SETTINGS
from pipeline.tasks import TASK_NAMES
from tests.fixtures.paths import ROOT

DEPLOY = ROOT / "deploy"
VENV_BIN = "/opt/docketeer/venv/bin/"  # where the units expect the installed package
UNITS = sorted(p for p in DEPLOY.iterdir() if p.suffix in (".service", ".timer"))


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return parser


def exec_starts() -> dict[str, list[str]]:
    return {p.name: shlex.split(unit(p)["Service"]["ExecStart"]) for p in UNITS if p.suffix == ".service"}


def test_the_recipe_has_luigid_a_worker_per_instance_and_discovery_with_timers():
    assert {p.name for p in UNITS} == {"luigid.service", "docketeer-worker@.service", "docketeer-worker@.timer",
                                       "docketeer-discover.service", "docketeer-discover.timer"}
    for service in ("docketeer-worker@.service", "docketeer-discover.service"):
        assert unit(DEPLOY / service)["Service"]["Environment"] == "LUIGI_CONFIG_PATH=/etc/docketeer/luigi.cfg"
    assert unit(DEPLOY / "luigid.service")["Service"]["Environment"] == "LUIGI_CONFIG_PATH=/etc/docketeer/luigid.cfg"


def test_each_luigi_command_names_a_task_of_the_pipeline_and_options_luigi_takes():
    commands = {name: argv for name, argv in exec_starts().items() if argv[0] == VENV_BIN + "luigi"}
    assert set(commands) == {"docketeer-worker@.service", "docketeer-discover.service"}
    for name, argv in commands.items():
        args = argv[1:]
        assert args[:2] == ["--module", "pipeline"] and args[2] in TASK_NAMES, name
        # Luigi's own parser over the task's parameters: an unknown option or task exits 2
        parsed = CmdlineParser(args)
        assert parsed.known_args.core_module == "pipeline"
        assert parsed.known_args.core_workers == "1"


def test_a_luigi_command_with_a_misspelt_option_is_refused_by_the_same_check():
    with pytest.raises(SystemExit):
        CmdlineParser(["--module", "pipeline", "IndexAll", "--worker", "1"])


def test_the_luigid_command_takes_its_options_and_listens_where_the_workers_look():
    argv = exec_starts()["luigid.service"]
    assert argv[0] == VENV_BIN + "luigid"
    helped = subprocess.run([str(Path(sys.executable).with_name("luigid")), "--help"], capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    options = [a for a in argv[1:] if a.startswith("--")]
    assert options and all(f"{o} " in helped.stdout or f"{o}\n" in helped.stdout for o in options), options
    assert "--background" not in argv  # systemd keeps it in the foreground
    port = argv[argv.index("--port") + 1]
    assert cfg("luigi.cfg")["core"]["scheduler_port"] == port


def cfg(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(DEPLOY / name, encoding="utf-8")
    return parser


def _params(config_class: type[luigi.Config]) -> set[str]:
    return {name for name, _ in config_class.get_params()}


def test_luigid_cfg_bounds_luigids_memory_and_keeps_task_history_off():
    scheduler = cfg("luigid.cfg")["scheduler"]
    assert set(scheduler) <= _params(luigi.scheduler.scheduler), set(scheduler) - _params(luigi.scheduler.scheduler)
    assert scheduler.getboolean("record_task_history") is False
    for bound in ("remove_delay", "retry_delay", "worker_disconnect_delay"):
        assert float(scheduler[bound]) > 0
    # a busy worker pings every ping_interval: a shorter delay would count it gone
    assert float(scheduler["worker_disconnect_delay"]) > float(_shipped("worker", "ping_interval"))
    assert scheduler["state_path"].startswith("/var/lib/luigid/")  # luigid.service's StateDirectory


def _shipped(section: str, key: str) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(LUIGI_DEFAULTS, encoding="utf-8")
    return parser[section][key]


def test_the_worker_hosts_luigi_cfg_sets_only_what_luigi_and_docketeer_read():
    parser = cfg("luigi.cfg")
    readers = {"core": luigi.interface.core, "worker": luigi.worker.worker, "retcode": luigi.retcodes.retcode}
    assert set(parser.sections()) == {*readers, "docketeer"}
    for section, config_class in readers.items():
        assert set(parser[section]) <= _params(config_class), (section, set(parser[section]) - _params(config_class))
    assert set(parser["docketeer"]) <= {s.name for s in SETTINGS}
    assert parser["worker"].getboolean("keep_alive") is True
    assert parser["retcode"]["already_running"] == parser["retcode"]["not_run"] == "0"


def test_systemd_finds_nothing_to_say_about_the_units(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify checks that each command exists: the units pointed at this checkout's venv; an
    # instance of each template, as systemctl enable would make
    for path in UNITS:
        text = path.read_text().replace(VENV_BIN, str(Path(sys.executable).parent) + "/")
        (tmp_path / path.name.replace("@.", "@1.")).write_text(text)
    done = subprocess.run([analyze, "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_operating_md_points_at_every_file_of_the_recipe():
    text = (ROOT / "docs" / "OPERATING.md").read_text()
    section = text[text.index("## Several hosts"):]
    section = section[:section.index("\n## ", 3)]
    missing = [p.name for p in DEPLOY.iterdir() if f"deploy/{p.name}" not in section]
    assert missing == []
