"""Build hook: `chat_templates/` and `data/` stay at the repository root (their documented place) and are
shipped inside the package as `wtb_local/chat_templates/` and `wtb_local/data/`, where
`wtb_local.contract.resources` finds them in a wheel, a zip or a checkout (docs/install.md §2). Everything else is
declared in pyproject.toml."""

from setuptools import find_packages, setup

# package name in the wheel -> folder at the repository root
SHIPPED = {"wtb_local.chat_templates": "chat_templates", "wtb_local.data": "data"}

setup(packages=[*find_packages(include=["wtb_local", "wtb_local.*"]), *sorted(SHIPPED)], package_dir=SHIPPED)
