"""The console's words in English and Chinese, and which language a request gets.

The labels the seeds fix are used word for word (SPEC §23 for English, §24 D-16 for Chinese):
"Settings › Knowledge" / 设置 › 知识库, "View changes" / 查看改动, "Keep" / 保留, "Delete them too" /
一起删除, "Added by this gem" / 这个 gem 新加的, "What it can do", "Download additional files".
The language is the ``lang`` cookie the header's switch sets, else the first of English or Chinese
in ``Accept-Language`` (by quality), else English.
"""

from __future__ import annotations

from typing import Final

from notochord.access.sentences import Lang
from notochord.console.i18n_knowledge import KNOWLEDGE_LABELS
from notochord.console.i18n_recovery import RECOVERY_LABELS
from notochord.console.i18n_refusals import REFUSAL_LABELS
from notochord.console.i18n_setting_refusals import SETTING_REFUSAL_LABELS

__all__ = ["COUNTED", "LABELS", "LANGS", "LANG_NAMES", "choose_lang", "text"]

LANGS: Final[tuple[Lang, ...]] = ("en", "zh")
# each language under its own name, as the header's switch shows it
LANG_NAMES: Final[dict[Lang, str]] = {"en": "English", "zh": "中文"}

LABELS: Final[dict[str, tuple[str, str]]] = {
    "app_name": ("notochord", "notochord"),
    "console": ("Console", "控制台"),
    "nav_gems": ("Gems", "Gem"),
    "nav_changes": ("View changes", "查看改动"),
    "space": ("Space", "空间"),
    "space_personal": ("Personal", "个人"),
    "space_org": ("Organization {name}", "组织 {name}"),
    "switch": ("Switch", "切换"),
    "language": ("Language", "语言"),
    "sign_out": ("Sign out", "退出"),
    "skip": ("Skip to content", "跳到正文"),
    # gems list and install
    "gems_title": ("Gems", "Gem"),
    "gems_none": ("No gem is installed in this space yet.", "这个空间还没有安装 gem。"),
    "gems_switched_on": ("{on} of {total} permissions on", "已打开 {on}/{total} 项权限"),
    "install_title": ("Install a gem", "安装 gem"),
    "install_from_folder": ("From a folder on this computer", "从这台电脑上的文件夹"),
    "install_folder_hint": (
        "The folder that holds the gem's notochord.json or manifest.json.",
        "存放 gem 的 notochord.json 或 manifest.json 的文件夹。",
    ),
    "install_nothing_chosen": ("Choose the gem's folder or file first.", "请先选择 gem 的文件夹或文件。"),
    "install_from_file": ("Or from a packaged file", "或者从打包文件"),
    "install_file_hint": (
        "A .zip of the gem's folder, or its notochord.json alone.",
        "gem 文件夹的 .zip 压缩包,或者单独的 notochord.json。",
    ),
    "install_review": ("Review", "查看"),
    "install_screen": ("Install {name}?", "安装 {name}?"),
    "install_asks": (
        "It asks for these permissions, all off until you switch them on:",
        "它请求以下权限,在你打开之前全部关闭:",
    ),
    "install_asks_none": ("It asks for no knowledge permission.", "它没有请求任何知识库权限。"),
    "install_reason": ("Why it asks", "请求原因"),
    "install_network": ("Network access", "网络访问"),
    "install_network_none": ("It makes no network requests.", "它不发起网络请求。"),
    "install_local_network": (
        "It may also reach the local machine and internal network.",
        "它还可以访问本机和内部网络。",
    ),
    "install_confirm": ("Install", "安装"),
    "install_left_out": (
        "Left out of the package, as never part of a gem: {what}.",
        "包里的这些内容不属于 gem,已略去:{what}。",
    ),
    "cancel": ("Cancel", "取消"),
    "installed": ("Installed {name}. Every permission is off.", "已安装 {name}。所有权限都已关闭。"),
    # gem page
    "gem_what": ("What it can do", "它能做什么"),
    "gem_tools": ("Tools", "工具"),
    "gem_tool_knowledge": ("uses your knowledge", "会用到你的知识库"),
    "gem_resources": ("Download additional files", "下载附加文件"),
    "gem_resources_none": ("It downloads no additional files.", "它不下载附加文件。"),
    "res_size": ("Size", "大小"),
    "res_host": ("From", "来源"),
    "res_when": ("When", "何时"),
    "res_unknown_size": ("not stated", "未说明"),
    "res_at_install": ("at install", "安装时"),
    "settings_knowledge": ("Settings › Knowledge", "设置 › 知识库"),
    "switch_on": ("On", "开"),
    "switch_off": ("Off", "关"),
    "turn_on": ("Turn on", "打开"),
    "turn_off": ("Turn off", "关闭"),
    "perm_none": ("It requests no knowledge permission.", "它没有请求知识库权限。"),
    "facts_title": ("What it may know about you", "它可能了解的关于你的信息"),
    "facts_hint": (
        "Your current values for what its permissions cover. What you enter here counts as said by you.",
        "它的权限涵盖的信息,以及你现在的值。你在这里填写的内容算作你本人说的。",
    ),
    "added_by_gem": ("Added by this gem", "这个 gem 新加的"),
    "fact_empty": ("not filled in", "未填写"),
    "fact_save": ("Save", "保存"),
    "fact_add": ("Add", "添加"),
    "fact_delete": ("Delete", "删除"),
    "fact_value": ("Value", "值"),
    "fact_saved": ("Saved.", "已保存。"),
    "fact_deleted": ("Deleted.", "已删除。"),
    "fact_value_needed": ("Type a value first.", "请先输入一个值。"),
    "ticks_title": ("Collections you choose", "你选定的知识库"),
    "ticks_hint": (
        "Its permissions for “the collections you choose” reach only the ones ticked here.",
        "它对“你选定的知识库”的权限只涉及这里勾选的知识库。",
    ),
    "ticks_none": ("You have no collection of your own yet.", "你还没有自己的知识库。"),
    "network_title": ("Network access", "网络访问"),
    # uninstall
    "uninstall": ("Uninstall…", "卸载…"),
    "uninstall_title": ("Uninstall {name}?", "卸载 {name}?"),
    "uninstall_wrote": ("What it wrote", "它写入的内容"),
    "uninstall_explain": (
        "Keep leaves them as they are, still marked as written by this gem. Delete them too removes them; "
        "you can undo that afterwards. Either way its permissions and private storage are removed.",
        "保留:它们保持原样,仍标记为这个 gem 写入的。一起删除:把它们删掉,之后可以撤销。"
        "无论哪种,它的权限和私有存储都会被删除。",
    ),
    "keep": ("Keep", "保留"),
    "delete_too": ("Delete them too", "一起删除"),
    "uninstalled": ("Uninstalled {name}", "已卸载 {name}"),
    # {facts}, {documents} and {collections} are counted_facts, counted_documents, counted_collections
    "uninstalled_kept": (
        "Kept {facts}, {documents} and {collections}.",
        "保留了 {facts}、{documents}和{collections}。",
    ),
    "uninstalled_deleted": (
        "Deleted {facts}, {documents} and {collections}.",
        "删除了 {facts}、{documents}和{collections}。",
    ),
    "uninstall_undo": ("Undo the deletion", "撤销删除"),
    "uninstall_undo_hint": (
        "Undo brings back what it wrote; the gem itself stays uninstalled.",
        "撤销会恢复它写入的内容;gem 本身仍是卸载状态。",
    ),
    # gem studio
    "nav_studio": ("Gem Studio", "Gem Studio"),
    "studio_title": ("Gem Studio › Knowledge", "Gem Studio › 知识库"),
    "studio_knowledge": ("Knowledge", "知识库"),
    "studio_hint": (
        "Paste or edit a manifest: its mistakes are listed as you type, by the same checks as install.",
        "粘贴或编辑 manifest:边输入边列出错误,检查与安装时完全相同。",
    ),
    "studio_form": ("Which file", "哪个文件"),
    "studio_manifest": ("Manifest", "Manifest"),
    "studio_check": ("Check", "检查"),
    "studio_empty": ("Type or paste a manifest.", "请输入或粘贴一份 manifest。"),
    "studio_ok": ("No mistakes: the install checks pass.", "没有错误:安装检查通过。"),
    # changes
    "changes_title": ("View changes", "查看改动"),
    "changes_none": ("No change matches.", "没有符合条件的改动。"),
    "filter_gem": ("Gem", "Gem"),
    "filter_status": ("Status", "状态"),
    "filter_run": ("Run", "运行"),
    "filter_since": ("Since", "起始日期"),
    "filter_any": ("Any", "全部"),
    "filter_apply": ("Filter", "筛选"),
    "status_applied": ("applied", "已生效"),
    "status_conflict": ("conflict", "冲突"),
    "status_reverted": ("reverted", "已撤销"),
    "col_when": ("When", "时间"),
    "col_who": ("Who", "谁"),
    "col_what": ("What", "内容"),
    "col_status": ("Status", "状态"),
    "who_you": ("You", "你"),
    "who_assistant": ("Assistant", "助手"),
    "who_system": ("System", "系统"),
    "undo": ("Undo", "撤销"),
    "undo_run": ("Undo the whole run", "撤销整次运行"),
    "undo_no_run": ("no run was chosen", "没有选择运行"),
    "already_undone": ("That was already undone.", "这已经撤销过了。"),
    "nothing_to_undo": (
        "This run changed no knowledge: there was nothing to undo.",
        "这次运行没有改动任何知识:没有可撤销的内容。",
    ),
    "undo_refused": ("This cannot be undone: {reason}", "无法撤销:{reason}"),
    "conflict_yours": ("Your value", "你的值"),
    "conflict_theirs": ("The gem's value", "gem 的值"),
    "conflict_kept": ("Your value was kept until you choose.", "在你选择之前,保留你的值。"),
    "conflict_keep_mine": ("Keep mine", "保留我的"),
    "conflict_take_theirs": ("Take the gem's", "采用 gem 的"),
    "conflict_resolved_mine": ("Kept your value.", "已保留你的值。"),
    "conflict_resolved_theirs": ("The gem's value is now yours.", "gem 的值现在是你的值。"),
    "conflict_not_resolved": ("This conflict cannot be settled: {reason}", "无法处理这个冲突:{reason}"),
    "page_newer": ("Newer", "较新"),
    "page_older": ("Older", "较早"),
    "page_n": ("Page {n}", "第 {n} 页"),
    # sign-in and refusals
    "signin_title": ("Sign in to the console", "登录控制台"),
    "signin_needed": (
        "Open the console with the link the server printed, or get a new one with: notochord console-url",
        "请用服务器打印的链接打开控制台,或者运行 notochord console-url 获取新链接。",
    ),
    "signin_ask": (
        "You opened a sign-in link from another site or app. Continue to sign in to the console of your vault "
        "on this computer.",
        "你从另一个网站或应用打开了登录链接。继续即可登录这台电脑上你的知识库控制台。",
    ),
    "signin_continue": ("Continue", "继续"),
    "signed_out": (
        "You are signed out. To sign in again, run notochord console-url and open the new sign-in link it "
        "prints (each link works once).",
        "你已退出登录。要重新登录,请运行 notochord console-url,然后打开它打印的新登录链接(每个链接只能用一次)。",
    ),
    "signin_link_used": (
        "This link was already used or has expired. Get a new one with: notochord console-url",
        "这个链接已经用过或已过期。请运行 notochord console-url 获取新链接。",
    ),
    "refused_title": ("Request refused", "请求被拒绝"),
    "refused_host": (
        "This address is not the console's own. Open the console at the address notochord serve printed.",
        "这不是控制台自己的地址。请用 notochord serve 打印的地址打开控制台。",
    ),
    "refused_origin": (
        "A page from another site tried to use the console. Nothing was changed.",
        "另一个网站的页面试图使用控制台。没有做任何更改。",
    ),
    "refused_cross_site": (
        "A page from another site tried to use the console. Nothing was changed.",
        "另一个网站的页面试图使用控制台。没有做任何更改。",
    ),
    "refused_csrf": (
        "This form has expired or did not come from the console. Reload the page and try again; nothing was changed.",
        "这个表单已失效,或者不是来自控制台。请刷新页面后重试;没有做任何更改。",
    ),
    "refused_form": (
        "The form could not be read (too many fields, or a part too large). Nothing was changed.",
        "无法读取这个表单(字段太多,或某一部分太大)。没有做任何更改。",
    ),
    "refused_length": (
        "The request did not say how long it is. Nothing was changed.",
        "请求没有说明长度。没有做任何更改。",
    ),
    "refused_too_large": (
        "That is too large: the console accepts up to 16 MB. Nothing was changed.",
        "内容太大:控制台最多接受 16 MB。没有做任何更改。",
    ),
    "refused_switch": (
        "The form's “{field}” must be 1 (on) or 0 (off), not “{value}”. Nothing was changed.",
        "表单中的“{field}”必须是 1(开)或 0(关),而不是“{value}”。没有做任何更改。",
    ),
    "refused_switch_missing": (
        "The form's “{field}” is missing: it must be 1 (on) or 0 (off). Nothing was changed.",
        "表单缺少“{field}”:它必须是 1(开)或 0(关)。没有做任何更改。",
    ),
    "refused_lang": (
        "“{value}” is not a language of the console; choose one of: {langs}. Nothing was changed.",
        "“{value}”不是控制台的语言;请选择:{langs}。没有做任何更改。",
    ),
    "refused_lang_missing": (
        "The form did not name a language; choose one of: {langs}. Nothing was changed.",
        "表单没有指明语言;请选择:{langs}。没有做任何更改。",
    ),
    "refused_space": (
        "“{value}” is not one of your spaces; choose one of: {spaces}. Nothing was changed.",
        "“{value}”不是你的空间;请选择:{spaces}。没有做任何更改。",
    ),
    "refused_space_missing": (
        "The form named no space; choose one of yours: {spaces}. Nothing was changed.",
        "表单没有指明空间;请从你的空间中选择:{spaces}。没有做任何更改。",
    ),
    "refused_query_int": (
        "“{name}” in the address must be a whole number, not “{value}”.",
        "地址中的“{name}”必须是整数,而不是“{value}”。",
    ),
    "refused_query_number": (
        "“{name}” in the address must be a number, not “{value}”.",
        "地址中的“{name}”必须是数字,而不是“{value}”。",
    ),
    "refused_query_bool": (
        "“{name}” in the address must be true or false, not “{value}”.",
        "地址中的“{name}”必须是 true 或 false,而不是“{value}”。",
    ),
    "refused_query_missing": ("This page needs “{name}” in its address.", "这个页面的地址中需要“{name}”。"),
    "refused_query": (
        "“{name}” in the address cannot be “{value}” on this page.",
        "这个页面的地址中的“{name}”不能是“{value}”。",
    ),
    "refused_request": (
        "This page cannot use the “{name}” this request carries.",
        "这个页面无法使用这个请求中的“{name}”。",
    ),
    "refused_page": (
        "Page “{value}” is not a page number from 1 to {max}; the first page is shown.",
        "“{value}”不是 1 到 {max} 之间的页码;现在显示的是第一页。",
    ),
    "refused_status": (
        "Status “{value}” is not one of {statuses}; the list shows every status.",
        "状态“{value}”不是 {statuses} 之一;列表显示所有状态。",
    ),
    "path_err_nul": (
        "{path} holds the NUL character (U+0000), which no path can hold; type the folder's full path.",
        "{path} 含有 NUL 字符(U+0000),路径中不能有这个字符;请输入文件夹的完整路径。",
    ),
    "path_err_home": (
        "{path} starts with the home folder of a user this computer does not have; "
        "type the folder's full path, starting with /.",
        "{path} 开头的是这台电脑上不存在的用户的主文件夹;请输入文件夹的完整路径,以 / 开头。",
    ),
    "path_err_too_long": (
        "{path} is longer than this computer allows for a path or for a name in it; type the folder's full path.",
        "{path} 超出了这台电脑允许的路径或名称长度;请输入文件夹的完整路径。",
    ),
    "path_err_unreadable": (
        "{path} cannot be opened on this computer; check that it exists and that you may read it, "
        "and type the folder's full path.",
        "在这台电脑上无法打开 {path};请确认它存在并且你可以读取,然后输入文件夹的完整路径。",
    ),
    "not_found_title": ("Not found", "找不到"),
    "not_found": ("There is nothing at this address.", "这个地址没有内容。"),
    "method_title": ("Wrong kind of request", "请求方式不对"),
    "method_not_allowed": ("This page does not accept {method} requests.", "这个页面不接受 {method} 请求。"),
    "error_title": ("That did not work", "操作没有成功"),
    "error_request": ("The console cannot answer this request.", "控制台无法处理这个请求。"),
    "back": ("Back", "返回"),
    # search, runs, network access, working folder
    "plain": ("{text}", "{text}"),
    "nav_search": ("Search", "搜索"),
    "search_title": ("Search", "搜索"),
    "search_query": ("Search your documents", "搜索你的文档"),
    "search_go": ("Search", "搜索"),
    "search_filters": ("Filters", "筛选条件"),
    "search_collections": ("Only in these collections (with their subfolders)", "只在这些知识库中(包括子文件夹)"),
    "search_from": ("Dated from", "日期从"),
    "search_to": ("Dated to", "日期到"),
    "search_kind": ("Kind", "类型"),
    "search_entity": ("Mentioning (name or e-mail)", "提到(名字或邮箱)"),
    "kind_person": ("person", "人"),
    "kind_org": ("organization", "组织"),
    "kind_place": ("place", "地点"),
    "search_mentioning": ("mentioning {name}", "提到 {name}"),
    "search_untitled": ("(untitled)", "(无标题)"),
    "search_locator": (
        "document {doc} · passage {chunk} · characters {start}–{end}",
        "文档 {doc} · 第 {chunk} 段 · 字符 {start}–{end}",
    ),
    "search_score": ("score {score} ({why})", "得分 {score}({why})"),
    "search_why_words": ("words", "词语匹配"),
    "search_why_meaning": ("meaning {similarity}", "语义相近 {similarity}"),
    "search_why_sep": (", ", "、"),
    "search_hint": (
        "Type what to look for, or choose a filter: an empty search lists the newest documents.",
        "输入要找的内容,或者选择筛选条件:空搜索会列出最新的文档。",
    ),
    "search_err_long": (
        "The search is {n} characters long; shorten it to at most {max}.",
        "搜索有 {n} 个字符;请缩短到 {max} 个以内。",
    ),
    "search_err_collection": ("Tick collections from the list.", "请从列表中勾选知识库。"),
    "search_err_date": ("“{value}” is not a date; write it as YYYY-MM-DD.", "“{value}”不是日期;请写成 YYYY-MM-DD。"),
    "search_err_order": (
        "This day is before the first one; choose a later day.",
        "这一天早于起始日期;请选择更晚的日期。",
    ),
    "search_err_kind": (
        "“{value}” is not a kind; choose person, organization or place.",
        "“{value}”不是类型;请选择人、组织或地点。",
    ),
    "search_err_entity": (
        "Nothing of this kind is called “{value}”; type the name or e-mail as your contacts show it.",
        "没有这个类型叫“{value}”的对象;请按联系人里的写法输入名字或邮箱。",
    ),
    "nav_runs": ("Runs", "运行记录"),
    "runs_title": ("Runs", "运行记录"),
    "runs_none": ("No run yet.", "还没有运行记录。"),
    "runs_all_of_gem": ("All its runs", "它的所有运行记录"),
    "run_status_running": ("running", "运行中"),
    "run_status_succeeded": ("succeeded", "成功"),
    "run_status_failed": ("failed", "失败"),
    "run_status_timeout": ("timed out", "超时"),
    "run_status_cancelled": ("cancelled", "已取消"),
    "run_status_interrupted": ("interrupted", "已中断"),
    "run_title": ("A run of {gem}", "{gem} 的一次运行"),
    "run_gem": ("Gem", "Gem"),
    "run_gem_uninstalled": ("uninstalled since", "已卸载"),
    "run_started": ("Started", "开始"),
    "run_finished": ("Finished", "结束"),
    "run_folder": ("Conversation folder", "对话文件夹"),
    "run_no_folder": ("none: it was not called from a conversation", "无:它不是从对话中调用的"),
    "run_error": ("Error", "错误"),
    "run_changes": ("Its changes", "它做的改动"),
    "run_changes_none": ("It changed nothing in your knowledge.", "它没有改动你的知识库。"),
    "run_all_changes": ("See all its changes", "查看它的全部改动"),
    "run_undo": ("Undo this run", "撤销这次运行"),
    "run_files": ("Its file changes", "它改动的文件"),
    "run_files_none": ("It changed no file in your folders.", "它没有改动你文件夹里的文件。"),
    "run_rollback": ("Roll back its files", "恢复它改动的文件"),
    "file_op_create": ("created", "新建"),
    "file_op_overwrite": ("overwrote", "覆盖"),
    "file_op_delete": ("deleted", "删除"),
    "file_op_move": ("moved", "移动"),
    "file_op_mkdir": ("made folder", "新建文件夹"),
    "file_rolled_back": ("rolled back", "已恢复"),
    "rollback_refused": ("Its files cannot be rolled back: {reason}", "无法恢复它改动的文件:{reason}"),
    "rollback_no_folder": ("it was not called from a conversation", "它不是从对话中调用的"),
    "rollback_nothing": ("There was nothing left to roll back.", "没有需要恢复的文件了。"),
    "rollback_skipped": ("Left alone, each for the reason given:", "以下文件没有动,原因见各项:"),
    "nav_network": ("Network access", "网络访问"),
    "net_title": ("Settings › System › Network access", "设置 › 系统 › 网络访问"),
    "net_space": ("For the space {space}.", "适用于空间 {space}。"),
    "net_hint": (
        "A gem reaches a host only if its own permission lists it and these rules allow it.",
        "只有 gem 自己的权限列出了某个主机,并且这里的规则也允许,它才能访问该主机。",
    ),
    "net_external": ("External network", "外部网络"),
    "net_mode": ("Mode", "模式"),
    "net_mode_open": ("Open: every external host a gem lists", "开放:gem 列出的所有外部主机"),
    "net_mode_allowlist": ("Allowlist: only the hosts listed here", "允许列表:只允许这里列出的主机"),
    "net_mode_blocklist": ("Blocklist: every host except the ones listed here", "阻止列表:除这里列出的以外的所有主机"),
    "net_mode_save": ("Save the mode", "保存模式"),
    "net_list_allowlist": ("Allowed hosts", "允许的主机"),
    "net_list_blocklist": ("Blocked hosts", "阻止的主机"),
    "net_list_empty": ("The list is empty.", "列表是空的。"),
    "net_kept": ("Kept, not in force — {mode}:", "已保留,当前不生效——{mode}:"),
    "net_add_host": ("Host (host, host:port or *.example.com)", "主机(host、host:port 或 *.example.com)"),
    "net_add": ("Add", "添加"),
    "net_remove": ("Remove", "移除"),
    "net_local": ("Local machine and internal network", "本机和内部网络"),
    "net_local_hint": (
        "Only gems that declare allowLocalNetwork may reach these addresses, and only these.",
        "只有声明了 allowLocalNetwork 的 gem 才能访问这些地址,而且只能访问这些地址。",
    ),
    "net_local_empty": ("None: no local address can be reached.", "无:不能访问任何本地地址。"),
    "net_add_local": ("Address (e.g. localhost:5173 or 192.168.1.20)", "地址(例如 localhost:5173 或 192.168.1.20)"),
    "net_saved": (
        "Saved. It applies to the very next request of every gem.",
        "已保存。从每个 gem 的下一次请求起生效。",
    ),
    "net_err_mode": ("Choose open, allowlist or blocklist.", "请选择开放、允许列表或阻止列表。"),
    "net_err_empty": ("Type an address first.", "请先输入一个地址。"),
    "net_err_open": (
        "Open mode allows every external host; choose allowlist or blocklist first to list hosts.",
        "开放模式允许所有外部主机;要列出主机,请先选择允许列表或阻止列表。",
    ),
    "net_err_long": (
        "This entry has {n} characters; a host name or address with its :port has at most {max}. "
        "Check what was pasted.",
        "这一项有 {n} 个字符;主机名或地址(含 :端口)最多 {max} 个字符。请检查粘贴的内容。",
    ),
    "net_err_not_listed": ("{entry} is not on the list.", "{entry} 不在列表中。"),
    "gem_net_hosts": ("It may reach these hosts:", "它可以访问这些主机:"),
    "gem_net_local": (
        "It can also reach the local machine and internal network addresses you listed:",
        "它还可以访问你列出的本机和内部网络地址:",
    ),
    "gem_net_local_none": (
        "You listed none, so it reaches no local address.",
        "你没有列出任何地址,所以它不能访问本地地址。",
    ),
    "gem_net_rules": (
        "Your own rules apply on top. External network: {mode}.",
        "你自己的规则同时生效。外部网络:{mode}。",
    ),
    "folder_title": ("Settings › Working folder", "设置 › 工作文件夹"),
    "folder_hint": (
        "Its scheduled and event-triggered SOPs have no conversation: the folder chosen here is the one they work in.",
        "它的定时和事件触发的 SOP 没有对话:这里选的文件夹就是它们工作的地方。",
    ),
    "sop_schedule": ("scheduled", "定时"),
    "sop_event": ("event-triggered", "事件触发"),
    "sop_chat": ("from a chat", "从对话调用"),
    "folder_current": ("Working folder:", "工作文件夹:"),
    "folder_none": (
        "None chosen: those SOPs have no working folder.",
        "未选择:这些 SOP 没有工作文件夹。",
    ),
    "folder_choose": ("Folder (its full path)", "文件夹(完整路径)"),
    "folder_rules": (
        "Not allowed: the whole disk, your home folder itself, notochord's data, system or other "
        "applications' folders, hidden folders.",
        "不允许:整个磁盘、主文件夹本身、notochord 的数据、系统或其他应用的文件夹、隐藏文件夹。",
    ),
    "folder_save": ("Choose this folder", "选择这个文件夹"),
    "folder_clear": ("Choose no folder", "不选文件夹"),
    "folder_err_empty": ("Type the folder's full path first.", "请先输入文件夹的完整路径。"),
    "folder_err_relative": ("{path} is not a full path; start it with /.", "{path} 不是完整路径;请以 / 开头。"),
    **KNOWLEDGE_LABELS,
    **RECOVERY_LABELS,
    **REFUSAL_LABELS,
    **SETTING_REFUSAL_LABELS,
}


COUNTED: Final[dict[str, tuple[str, str, str]]] = {
    # key: (English for one, English for any other count, Chinese); the count is the value ``n``
    "studio_mistakes": (
        "{n} mistake would stop the install:",
        "{n} mistakes would stop the install:",
        "有 {n} 处错误会让安装失败:",
    ),
    "undone": ("Undone: {n} change.", "Undone: {n} changes.", "已撤销 {n} 项改动。"),
    "search_count": ("{n} passage found.", "{n} passages found.", "找到 {n} 段内容。"),
    "search_hidden": (
        "{n} passage found only by meaning, and not close enough to the search, is not shown.",
        "{n} passages found only by meaning, and not close enough to the search, are not shown.",
        "另有 {n} 段内容只按意思找到,而且与搜索不够接近,没有显示。",
    ),
    "rollback_done": ("Rolled back {n} file.", "Rolled back {n} files.", "已恢复 {n} 个文件。"),
    "kn_doc_count": ("{n} document", "{n} documents", "{n} 篇文档"),
    # the noun after a count shown on its own
    "count_facts": ("fact", "facts", "条事实"),
    "count_documents": ("document", "documents", "篇文档"),
    "count_collections": ("collection", "collections", "个知识库"),
    "counted_facts": ("{n} fact", "{n} facts", "{n} 条事实"),
    "counted_documents": ("{n} document", "{n} documents", "{n} 篇文档"),
    "counted_collections": ("{n} collection", "{n} collections", "{n} 个知识库"),
    "kn_more_passages": (
        "{n} more passage is not shown.",
        "{n} more passages are not shown.",
        "还有 {n} 个段落没有显示。",
    ),
}


def text(key: str, lang: Lang, /, **values: object) -> str:
    """The label ``key`` in ``lang``, with ``{name}`` placeholders filled from ``values``; a label
    of :data:`COUNTED` takes its English form for one or for any other count from ``n``.

    ``key`` and ``lang`` are positional only, so a value may be called ``key`` (a document's key).
    """
    if key in COUNTED:
        one, other, zh = COUNTED[key]
        en = one if values.get("n") == 1 else other
    else:
        en, zh = LABELS[key]
    template = zh if lang == "zh" else en
    return template.format(**values) if values else template


def choose_lang(cookie: str | None, accept_language: str | None) -> Lang:
    """The language of a request: the switch's cookie, else ``Accept-Language``, else English."""
    if cookie == "en":
        return "en"
    if cookie == "zh":
        return "zh"
    best: tuple[float, Lang] | None = None
    for position, item in enumerate((accept_language or "").split(",")[:20]):
        tag, _, params = item.strip().partition(";")
        primary = tag.strip().lower().split("-")[0]
        if primary not in LANGS:
            continue
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                continue
        if quality <= 0:
            continue
        # earlier entries win ties, as the header lists preferences in order
        score = quality - position * 1e-6
        if best is None or score > best[0]:
            best = (score, "zh" if primary == "zh" else "en")
    return best[1] if best else "en"
