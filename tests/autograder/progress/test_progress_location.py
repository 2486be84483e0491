"""Where the log lives: WORKBOOK_HOME, the user data folder, Colab and Google Drive."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import platformdirs
import pytest

from autograder.progress.location import (
    DriveNotMountedError,
    default_log_path,
    describe_location,
    drive_store_path,
    in_colab,
)


def test_workbook_home_wins_and_its_folder_is_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "class" / "me"
    monkeypatch.setenv("WORKBOOK_HOME", str(home))
    assert default_log_path() == home / "progress.sqlite3"
    assert home.is_dir()


def test_without_workbook_home_the_user_data_folder_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def fake_user_data_dir(appname: str, appauthor: object = None) -> str:
        asked.append((appname, appauthor))
        return str(tmp_path / "data" / appname)

    monkeypatch.delenv("WORKBOOK_HOME", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", fake_user_data_dir)
    expected = tmp_path / "data" / "distributed-training-workbook" / "progress.sqlite3"
    assert default_log_path() == expected
    assert expected.parent.is_dir()
    assert asked == [("distributed-training-workbook", False)]


def test_an_empty_workbook_home_counts_as_unset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_HOME", "  ")
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(tmp_path / "d"))
    assert default_log_path() == tmp_path / "d" / "progress.sqlite3"


def test_in_colab(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert not in_colab()
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab_20250301-060000_RC00")
    assert in_colab()
    monkeypatch.delenv("COLAB_RELEASE_TAG")
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert in_colab()


def test_drive_not_mounted_says_how_to_mount_it(tmp_path: Path) -> None:
    with pytest.raises(DriveNotMountedError) as info:
        drive_store_path(tmp_path / "drive")
    message = str(info.value)
    assert "not mounted" in message
    assert "from google.colab import drive; drive.mount('/content/drive')" in message


def test_drive_path_when_mounted(tmp_path: Path) -> None:
    (tmp_path / "drive" / "MyDrive").mkdir(parents=True)
    path = drive_store_path(tmp_path / "drive")
    assert path == (tmp_path / "drive" / "MyDrive" / "distributed-training-workbook"
                    / "progress.sqlite3")
    assert path.parent.is_dir()
    assert drive_store_path(tmp_path / "drive") == path  # a second call is fine


def test_describe_location_warns_about_colab_scratch_space(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLAB_RELEASE_TAG", "x")
    assert "deletes when this session ends" in describe_location("/root/.local/p.sqlite3")
    on_drive = describe_location("/content/drive/MyDrive/distributed-training-workbook/p")
    assert "deletes" not in on_drive
    monkeypatch.delenv("COLAB_RELEASE_TAG")
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert describe_location("/home/me/p.sqlite3") == "Progress is saved to /home/me/p.sqlite3."
