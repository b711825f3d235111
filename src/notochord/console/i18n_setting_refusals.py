"""The console's words (English, Chinese) for what the network settings, a gem's working folder and
a run's file history refused, joined into :data:`notochord.console.i18n.LABELS`.

One label ``refused_<code>`` per reason of :class:`notochord.errors.ConfigurationError` (the user's
network rules, ``net_*``) and of :class:`notochord.errors.FileError` (the working folders,
``folder_*``, and the file history, ``history_*``), filled from its values. The English column is
the store's own sentence, word for word, which the English console shows as the command line, the
REST service and MCP do; the Chinese one says which list or folder it is about and what to do.
A network refusal's ``list`` (``external``, ``local``) and ``mode`` (``allowlist``, ``blocklist``)
are words of their own, ``refused_net_list_*`` and ``refused_net_mode_*``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SETTING_REFUSAL_LABELS"]

_NOT_WORKING_FOLDER: Final = "E_PERM_DENIED: {path} cannot be a working folder"

SETTING_REFUSAL_LABELS: Final[dict[str, tuple[str, str]]] = {
    # the lists and modes of the network settings, as a refusal names them
    "refused_net_list_external": ("the external network list", "外部网络列表"),
    "refused_net_list_local": ("the local machine and internal network list", "本机和内部网络列表"),
    "refused_net_mode_allowlist": ("allowlist", "允许列表"),
    "refused_net_mode_blocklist": ("blocklist", "阻止列表"),
    # an entry typed into a list of the network settings
    "refused_net_entry_not_text": (
        "{list} holds {entry}; every entry must be a string",
        "{list}里的 {entry} 不是主机名或地址,保存的规则已损坏;"
        "请在命令行运行 notochord network reset 恢复默认设置,然后重新设置",
    ),
    "refused_net_entry_empty": (
        "cannot put {entry} in {list}: an entry is a host name or address, optionally with :port",
        "{entry} 不能加入{list}:请填写主机名或地址,可以带 :端口",
    ),
    "refused_net_entry_scheme_or_path": (
        "cannot put {entry} in {list}: an entry is a host name or address without a scheme or path",
        "{entry} 不能加入{list}:只填写主机名或地址,不要带 http:// 这样的协议,也不要带 / 和后面的路径",
    ),
    "refused_net_entry_wildcard_local": (
        "cannot put {entry} in {list}: wildcards are not allowed; list each host or address",
        "{entry} 不能加入{list}:这个列表不能用通配符 *;请逐个填写主机或地址",
    ),
    "refused_net_entry_malformed": (
        "cannot put {entry} in {list}: write host, host:port or [IPv6]:port ({detail})",
        "{entry} 不能加入{list}:请写成 host、host:port 或 [IPv6]:port;"
        "端口是 1 到 65535 之间的数字,通配符只能写在最前面(*.example.com)",
    ),
    "refused_net_entry_external_address": (
        "cannot put {entry} in {list}: {address} is an external address; this list holds only addresses of the "
        "local machine and internal network. External hosts follow the access mode",
        "{entry} 不能加入{list}:{address} 是外部地址,这个列表只放本机和内部网络的地址;"
        "外部主机请用上面的外部网络模式设置",
    ),
    "refused_net_entry_local_address": (
        "cannot put {entry} in {list}: {address} is on the local machine or internal network; add it to the "
        "local machine and internal network list instead",
        "{entry} 不能加入{list}:{address} 属于本机或内部网络;请把它加到下面的“本机和内部网络”列表",
    ),
    "refused_net_entry_bad_name": (
        "cannot put {entry} in {list}: this is not a valid host name (letters, digits, hyphens, dots)",
        "{entry} 不能加入{list}:这不是有效的主机名;主机名只能由字母、数字、连字符和点组成,且最后一段不能全是数字",
    ),
    "refused_net_entry_localhost_external": (
        "cannot put {entry} in {list}: localhost names are on the local machine; add them to the local machine "
        "and internal network list instead",
        "{entry} 不能加入{list}:localhost 这类名称指向本机;请把它加到下面的“本机和内部网络”列表",
    ),
    "refused_net_too_many": (
        "{list} may hold at most {max} entries",
        "{list}最多只能有 {max} 项;请先移除不再需要的条目",
    ),
    # the mode of the external network
    "refused_net_unknown_mode": (
        "network access mode {mode} is not one of {modes}",
        "网络访问模式 {mode} 无效;请选择开放、允许列表或阻止列表",
    ),
    "refused_net_open_no_list": (
        "open mode allows every external host and takes no host list",
        "开放模式允许所有外部主机,不需要主机列表;要列出主机,请先选择允许列表或阻止列表",
    ),
    "refused_net_open_no_list_hint": (
        "open mode allows every external host and takes no host list; use allowlist or blocklist to list hosts",
        "开放模式允许所有外部主机,不需要主机列表;要列出主机,请先选择允许列表或阻止列表",
    ),
    "refused_net_no_host": (
        "name at least one host to put on the {mode}",
        "请至少填写一个要加入{mode}的主机",
    ),
    # an entry to remove
    "refused_net_not_listed": (
        "{entry} is not in {list} ({listed})",
        "{entry} 不在{list}中(列表里有:{listed});请从列表中选择要移除的条目",
    ),
    "refused_net_not_listed_empty": (
        "{entry} is not in {list} (the list is empty)",
        "{entry} 不在{list}中:这个列表是空的,没有可以移除的条目",
    ),
    # the stored rules
    "refused_net_rules_damaged": (
        "the stored network rules are damaged ({why}); reset them to the defaults (open, no local address) "
        "with `notochord network reset`, then set them again",
        "保存的网络规则已损坏,无法读取;请在命令行运行 notochord network reset 恢复默认设置"
        "(开放,不允许任何本地地址),然后重新设置",
    ),
    # a folder typed as a gem's working folder
    "refused_folder_root": (
        _NOT_WORKING_FOLDER + " (filesystem root): the whole disk would be open to gems",
        "{path} 不能作为工作文件夹:它是整个磁盘的根目录,选它会让 gem 能访问整个磁盘;请选择一个专门给 gem 用的文件夹",
    ),
    "refused_folder_home": (
        _NOT_WORKING_FOLDER + " (home folder): the home folder and the folders containing it hold all your files",
        "{path} 不能作为工作文件夹:主文件夹和包含它的文件夹里有你所有的文件;请选择主文件夹里的一个子文件夹",
    ),
    "refused_folder_data_dir": (
        _NOT_WORKING_FOLDER + " (data directory): notochord's own data cannot be opened to gems",
        "{path} 不能作为工作文件夹:它包含或位于 notochord 自己的数据目录,这些数据不能开放给 gem;请选择别的文件夹",
    ),
    "refused_folder_system": (
        _NOT_WORKING_FOLDER + " (system folder): {folder} belongs to the operating system",
        "{path} 不能作为工作文件夹:{folder} 属于操作系统;请选择你自己的文件夹",
    ),
    "refused_folder_app_bundle": (
        _NOT_WORKING_FOLDER + " (application folder): it is inside an application bundle",
        "{path} 不能作为工作文件夹:它在一个应用程序包里面;请选择你自己的文件夹",
    ),
    "refused_folder_app_data": (
        _NOT_WORKING_FOLDER + " (application folder): {folder} holds other applications' data",
        "{path} 不能作为工作文件夹:{folder} 存放着其他应用程序的数据;请选择你自己的文件夹",
    ),
    "refused_folder_hidden": (
        _NOT_WORKING_FOLDER + " (hidden folder): folders whose names start with . are hidden",
        "{path} 不能作为工作文件夹:名称以 . 开头的文件夹是隐藏文件夹;请选择一个不隐藏的文件夹",
    ),
    "refused_folder_not_absolute": (
        "{path} is not an absolute path; choose a folder by its full path",
        "{path} 不是完整路径;请输入文件夹的完整路径(以 / 开头)",
    ),
    "refused_folder_nul": (
        "{path} holds a NUL character, which no folder's name can; choose the folder again",
        "{path} 含有空字符(NUL),文件夹的名称里不会有它;请重新输入文件夹的路径",
    ),
    "refused_folder_is_file": ("{path} is a file; choose a folder", "{path} 是一个文件,不是文件夹;请选择一个文件夹"),
    "refused_folder_uncheckable": (
        "cannot check {path}: {detail}",
        "系统无法查看 {path};请检查路径是否写对(每一级的名称都不能太长),然后重新输入",
    ),
    "folder_err_missing": (
        "E_NOT_FOUND: the folder {path} does not exist",
        "文件夹 {path} 不存在;请先建好这个文件夹,或检查路径是否写对",
    ),
    # a run's file history, shown on its page and asked by "Roll back its files"
    "refused_history_folder_is_file": (
        "{path} is a file; give the folder whose history to use",
        "{path} 现在是一个文件,不再是文件夹,所以无法读取或恢复它的文件历史;请把那个文件夹放回原处后再试",
    ),
    "refused_history_unopenable": (
        "cannot open the file history in {place}: {detail}",
        "无法打开保存在 {place} 的文件历史({detail});请检查数据目录所在的磁盘是否可以读写,然后再试",
    ),
    "refused_history_unreadable": (
        "the file history could not be read: {detail}",
        "无法读取文件历史({detail});请稍后再试,如果一直这样,请检查数据目录所在的磁盘",
    ),
    "refused_history_unrecorded": (
        "the file history could not record a change: {detail}",
        "文件历史无法记录这次改动({detail});请检查数据目录所在的磁盘是否可以写入,然后再试",
    ),
    "refused_history_name_not_text": (
        "the file history cannot record a path holding a name that is not UTF-8 text; rename that file or folder first",
        "文件历史无法记录名称不是 UTF-8 文字的路径;请先给那个文件或文件夹改名",
    ),
}
