"""The console's words (English, Chinese) for what the store refused as the reader's mistake, joined
into :data:`notochord.console.i18n.LABELS`.

One label ``refused_<code>`` per reason of :class:`notochord.errors.KnowledgeValidationError`,
filled from its values; the English column is the store's own sentence, which the English console
shows as the command line, the REST service and MCP do. Where the refusal is about a field, the
words name it with ``{field}``, one of the ``refused_field_*`` labels the page passes for the field
the reader typed into.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REFUSAL_LABELS"]

REFUSAL_LABELS: Final[dict[str, tuple[str, str]]] = {
    # the field a refusal is about, as the sentence names it
    "refused_field_collection_name": ("the collection name", "知识库名称"),
    "refused_field_value": ("the value", "填写的值"),
    "refused_field_entity": ("the name", "填写的名称"),
    "refused_field_query": ("the search words", "搜索词"),
    "refused_field_filter": ("the filter", "筛选条件"),
    "refused_field_text": ("what was entered", "输入的内容"),
    # the kinds of entity, as a merge refusal names them
    "refused_kind_person": ("a person", "人物"),
    "refused_kind_organization": ("an organization", "组织"),
    "refused_kind_place": ("a place", "地点"),
    # what the reader typed
    "refused_too_long": (
        "{what} exceeds limit of {limit} characters (got {got}); shorten it",
        "{field}太长了:最多 {limit} 个字符,这里有 {got} 个;请缩短后再试",
    ),
    "refused_too_large": (
        "{what} exceeds limit of {limit} bytes as JSON (got {got}); store large data in a document",
        "{field}太大了:最多 {limit} 字节,这里有 {got} 字节;大段内容请存为文档",
    ),
    "refused_unstorable": (
        "{what} contains a character ({char}) which the store cannot hold; "
        "remove it (or replace it, e.g. with a space) and write again",
        "{field}包含一个无法保存的字符({char});请删除它(或换成空格)后再试",
    ),
    "refused_unstorable_filter": (
        "{what} contains a character ({char}) which no stored text can hold, so nothing could match; "
        "remove it and ask again",
        "{field}包含一个任何已保存的文字都不会有的字符({char}),所以什么也找不到;请删除它后再试",
    ),
    # where collections and documents may go
    "refused_builtin_move": (
        "the built-in collection {collection} cannot be moved",
        "内置知识库 {collection} 不能移动",
    ),
    "refused_builtin_rename": (
        "the built-in collection {collection} cannot be renamed",
        "内置知识库 {collection} 不能改名",
    ),
    "refused_into_itself": (
        "a collection cannot be moved into itself or one of its subfolders",
        "知识库不能移到它自己或它的子文件夹里;请选择别的位置",
    ),
    "refused_inside_diary": (
        "nothing can be created or moved inside the diary collection",
        "diary 知识库里不能新建或移入任何东西;请选择别的知识库",
    ),
    "refused_too_deep": (
        "collections nest at most {depth} levels deep; this would exceed the depth limit",
        "知识库最多嵌套 {depth} 层,这样会超过层数上限;请选择层级更浅的位置",
    ),
    "refused_keyed_document": (
        "a document written with a key cannot be moved; it stays where its key finds it",
        "用键写入的文档不能移动,它要留在它的键能找到它的地方",
    ),
    # entities
    "refused_merge_itself": ("cannot merge an entity into itself", "不能把一个实体合并到它自己;请选择另一个实体"),
    "refused_merge_self": ("the user (self) cannot be merged", "你自己(self)不能被合并"),
    "refused_delete_self": ("the user (self) cannot be deleted", "你自己(self)不能被删除"),
    "refused_merge_kinds": (
        "{merged} is {merged_kind} and {kept} {kept_kind}: only entities of the same kind can be merged",
        "{merged} 是{merged_kind},而 {kept} 是{kept_kind}:只有同一类型的实体才能合并",
    ),
    # an uploaded gem package
    "upload_not_package": (
        "{file} is not a gem package: upload a .zip or a notochord.json",
        "{file} 不是 gem 安装包:请上传 .zip 文件或 notochord.json",
    ),
    "upload_unpack": (
        "{file} could not be unpacked on this computer; check that the disk of the data directory has room, "
        "then upload it again",
        "无法在这台电脑上解压 {file};请检查数据目录所在的磁盘是否还有空间,然后重新上传",
    ),
    "upload_damaged": (
        "{file} is a damaged .zip: pack the gem's folder again and upload that",
        "{file} 是损坏的 .zip 文件:请重新打包 gem 的文件夹后再上传",
    ),
    "upload_gone": (
        "that upload is no longer here; choose the file again",
        "那次上传的文件已经不在了;请重新选择文件",
    ),
    "upload_no_manifest": (
        "the package has no notochord.json or manifest.json at its top",
        "安装包的最上层没有 notochord.json 或 manifest.json;请打包放着它的那个文件夹",
    ),
    "upload_outside": (
        "the package holds a path outside its folder: {path}",
        "安装包里有一个指向文件夹外面的路径:{path};请重新打包 gem 的文件夹",
    ),
    "upload_link": (
        "the package holds a link, which gems may not ship: {path}",
        "安装包里有一个链接,gem 不能带链接:{path}",
    ),
    "upload_too_many": (
        "the package holds more than {max} files and folders, the most a gem may hold; "
        "pack only the folder that holds the gem's manifest and its own files",
        "安装包里的文件和文件夹超过了 {max} 个,这是一个 gem 最多能有的数量;"
        "请只打包放着 gem 清单和它自己文件的那个文件夹",
    ),
    "upload_too_large": (
        "the package unpacks to more than {mib} MiB, the most a gem may hold; "
        "large data belongs in the manifest's resources, downloaded at install",
        "安装包解压后超过 {mib} MiB,这是一个 gem 最多能有的大小;大的数据应该写进清单的 resources,在安装时下载",
    ),
    "upload_cannot_install": ("the package cannot be installed:", "这个安装包无法安装:"),
    "upload_twice": (
        "{path} is in it twice, and unpacking would keep only the last one: pack the gem's folder again",
        "{path} 在安装包里出现了两次,解压时只会保留最后一个:请重新打包 gem 的文件夹",
    ),
    "upload_case": (
        "{first} and {second} differ only in case; a system whose file names ignore case keeps "
        "only one of them: rename one",
        "{first} 和 {second} 只有大小写不同;不区分大小写的系统只会保留其中一个:请给其中一个改名",
    ),
    # a gem installed already
    "install_already": (
        "gem {name} is already installed; upgrade it instead (notochord gem upgrade FOLDER)",
        "gem {name} 已经安装了;要换成这个版本,请升级它(notochord gem upgrade 文件夹)",
    ),
    # a gem whose run holds its code
    "uninstall_busy": (
        "{name} is running right now, and its code cannot be removed under a running tool, so nothing was "
        "changed. Try again once the run has ended.",
        "{name} 正在运行,运行中的工具所用的代码不能被移除,所以没有做任何改动。请等这次运行结束后再试。",
    ),
    # the REST service's own documents
    "refused_service_content": (
        "it belongs to knowledge base {kb} of the REST service, whose documents only the service writes; "
        "add, replace or delete them through /api/knowledge/kb/{kb}/documents",
        "它属于 REST 服务的知识库 {kb},那里的文档只能由该服务写入;"
        "请通过 /api/knowledge/kb/{kb}/documents 添加、替换或删除它们",
    ),
    # undo and conflicts
    "refused_revert_of_revert": (
        "a revert cannot itself be reverted; make the change again instead",
        "撤销本身不能再被撤销;请重新做一次那项改动",
    ),
    "refused_not_revertible": ("changes of type {op} cannot be reverted", "{op} 类型的改动不能撤销"),
    "refused_not_open_conflict": (
        "change {change} is not an open conflict (its status is {status}); "
        "only changes listed with status conflict can be resolved",
        "改动 {change} 已经不是待处理的冲突(它现在的状态是“{status}”);只有状态为“冲突”的改动才能处理",
    ),
    "refused_resolve_choice": (
        "take must be 'theirs' or 'mine', not {take}",
        "只能选择“保留我的”或“采用 gem 的”,而不是 {take}",
    ),
}
