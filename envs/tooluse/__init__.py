"""``rsigym/ToolUse-v0``: tau-bench-like retail and airline customer service, with TRACE conditions."""

from .catalog import domain_names, get_domain, get_tasks, load_task, register_domain
from .conditions import TOOLUSE_CONDITIONS, ToolView
from .domain import Domain, InvalidTask, Task, TaskDraft, build_tasks, copy_db, db_sha256, replay
from .env import ToolUseEnv
from .outputs import communicated, normalise
from .toolkit import Tool, ToolError, call_tool, tool
from .users import STOP, LLMUser, ScriptedUser, UserSimulator, make_user

__all__ = [
    "Domain", "InvalidTask", "LLMUser", "STOP", "ScriptedUser", "TOOLUSE_CONDITIONS", "Task",
    "TaskDraft", "Tool", "ToolError", "ToolUseEnv", "ToolView", "UserSimulator", "build_tasks",
    "call_tool", "communicated", "copy_db", "db_sha256", "domain_names", "get_domain", "get_tasks",
    "load_task", "make_user", "normalise", "register_domain", "replay", "tool",
]
