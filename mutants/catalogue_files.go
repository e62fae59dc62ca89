// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// filesMutants break the file tools and safefs.
var filesMutants = []Mutant{
	{
		Name:     "safefs-recheck-skipped",
		Packages: []string{"./safefs"},
		Run:      "TestRemove|TestMove",
		Why:      "Remove does not compare the file with what was approved",
		Edits: []Edit{
			{
				File: "safefs/fs_linux.go",
				Old:  "\t\tif d := got.Diff(want); d != nil {",
				New:  "\t\tif d := got.Diff(want); d != nil && false {",
			},
		},
	},
	{
		// (Removing the lastLook call from Remove survives: no test can reach the
		// window between verify and lastLook without a hook there. lastLook itself is
		// tested directly; see docs/TESTING.md.)
		Name:     "safefs-lastlook-blind",
		Packages: []string{"./safefs"},
		Why:      "the last look before the rename checks nothing (a late write or an inode swap goes unnoticed)",
		Edits: []Edit{
			{
				File: "safefs/fs_linux.go",
				Old:  "func lastLook(t *target, fd int, st *unix.Stat_t) error {\n",
				New:  "func lastLook(t *target, fd int, st *unix.Stat_t) error {\n\tif true {\n\t\treturn nil\n\t}\n",
			},
		},
	},
	{
		Name:     "safefs-follows-symlinks",
		Packages: []string{"./safefs"},
		Why:      "lookups follow symlinks (no RESOLVE_NO_SYMLINKS, no AT_SYMLINK_NOFOLLOW, no O_NOFOLLOW)",
		Edits: []Edit{
			{
				File: "safefs/fs_linux.go",
				Old:  "const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS",
				New:  "const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS",
			},
			{
				File: "safefs/fs_linux.go",
				Old:  "err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)",
				New:  "err := unix.Fstatat(dirfd, name, st, 0)",
			},
		},
	},
	{
		Name:     "safefs-swap-not-put-back",
		Packages: []string{"./safefs"},
		Why:      "Remove unlinks whatever was renamed aside, even a swapped-in entry",
		Edits: []Edit{
			{
				File: "safefs/fs_linux.go",
				Old:  "if err := fstatat(t.parent, tmp, &ent); err != nil || ent.Dev != st.Dev || ent.Ino != st.Ino {",
				New:  "if err := fstatat(t.parent, tmp, &ent); err != nil {",
			},
		},
	},
	{
		// The portable implementation (macOS, Windows; run on Linux by
		// TestMain) must meet the same attacks as the openat2 one.
		Name:     "safefs-portable-walk-follows-symlinks",
		Packages: []string{"./safefs"},
		Run:      "TestInspectRefusals|TestMove",
		Why:      "the portable per-component walk opens directories without O_NOFOLLOW, so a symlinked parent is followed",
		Edits: []Edit{
			{
				File: "safefs/sys_unix.go",
				Old:  "fd, err = unix.Openat(int(dir), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|noFollowAny|unix.O_CLOEXEC, 0)",
				New:  "fd, err = unix.Openat(int(dir), name, unix.O_RDONLY|unix.O_DIRECTORY|noFollowAny|unix.O_CLOEXEC, 0)",
			},
		},
	},
	{
		Name:     "safefs-portable-lastlook-blind",
		Packages: []string{"./safefs"},
		Run:      "TestLastLook",
		Why:      "the portable implementation's last look before acting checks nothing",
		Edits: []Edit{
			{
				File: "safefs/portable.go",
				Old:  "func (t *ptarget) lastLook(h handle, st fileStat) error {\n",
				New:  "func (t *ptarget) lastLook(h handle, st fileStat) error {\n\tif true {\n\t\treturn nil\n\t}\n",
			},
		},
	},
	{
		Name:     "safefs-portable-swap-not-put-back",
		Packages: []string{"./safefs"},
		Run:      "TestRemoveSwap|TestRaceSwap",
		Why:      "the portable Remove unlinks whatever was renamed aside, even a swapped-in entry",
		Edits: []Edit{
			{
				File: "safefs/portable.go",
				Old:  "if ent, err := f.sys.statAt(t.parent, tmp); err != nil || !ent.sameFile(st) {",
				New:  "if _, err := f.sys.statAt(t.parent, tmp); err != nil {",
			},
		},
	},
	{
		Name:     "safefs-portable-move-replaces",
		Packages: []string{"./safefs"},
		Run:      "TestMove",
		Why:      "the portable rename may replace an existing destination (no RENAME_NOREPLACE)",
		Edits: []Edit{
			{
				File: "safefs/sys_linux.go",
				Old:  "return unix.Renameat2(int(sdir), sname, int(ddir), dname, unix.RENAME_NOREPLACE)",
				New:  "return unix.Renameat2(int(sdir), sname, int(ddir), dname, 0)",
			},
		},
	},
	{
		Name:     "safefs-windows-streams-allowed",
		Packages: []string{"./safefs"},
		Run:      "Trap",
		Why:      "a colon in a Windows name is accepted, so a.txt:hidden (an alternate data stream) reaches the file system",
		Edits: []Edit{
			{
				File: "safefs/names.go",
				Old:  "\t\tcase b == ':':\n",
				New:  "\t\tcase b == ':' && false:\n",
			},
		},
	},
	{
		Name:     "safefs-windows-device-names-allowed",
		Packages: []string{"./safefs"},
		Run:      "Trap",
		Why:      "reserved Windows device names (NUL.txt, COM1) are accepted as file names",
		Edits: []Edit{
			{
				File: "safefs/names.go",
				Old:  "\tif isDeviceName(base) {\n",
				New:  "\tif isDeviceName(base) && false {\n",
			},
		},
	},
	{
		Name:     "safefs-windows-short-names-allowed",
		Packages: []string{"./safefs"},
		Run:      "Trap",
		Why:      "8.3 short names (PROGRA~1), which may alias a long name, are accepted",
		Edits: []Edit{
			{
				File: "safefs/names.go",
				Old:  "\tif isShortName(c) {\n",
				New:  "\tif isShortName(c) && false {\n",
			},
		},
	},
	{
		Name:     "files-delete-without-recheck",
		Packages: []string{"./files"},
		Why:      "delete_file removes by path (os.Remove) instead of safefs.Remove with the approved Info",
		Edits: []Edit{
			{
				File: "files/files.go",
				Old:  "if err := t.fs.Remove(info.Path, info); err != nil {",
				New:  "if err := os.Remove(info.Path); err != nil {",
			},
			{
				File: "files/files.go",
				Old:  "\t\"path/filepath\"\n",
				New:  "\t\"os\"\n\t\"path/filepath\"\n",
			},
		},
	},
	{
		Name:     "files-plan-shows-content-digest",
		Packages: []string{"./files", "./cmd/mcpsafe"},
		Run:      "ContentOracle",
		Why:      "the plan's content fingerprint is a plain SHA-256 prefix: the model can confirm guesses of a file it cannot read",
		Edits: []Edit{
			{
				File: "files/files.go",
				Old:  "\treturn hex.EncodeToString(t.gate.Mark(\"files content fingerprint v1\", []byte(i.HashScheme+\"\\x00\"+i.SHA256))[:6])\n",
				New:  "\treturn i.SHA256[:12]\n",
			},
		},
	},
	{
		Name:     "files-grant-scope-pattern",
		Packages: []string{"./files"},
		Run:      "TestGrantScopeIsTheLiteralDirectory",
		Why:      "a directory name becomes a regular expression: a grant for a.b/ covers aXb/",
		Edits: []Edit{
			{
				File: "files/grants.go",
				Old:  "re := \"^\" + regexp.QuoteMeta(prefix) + \"[^/]+$\"",
				New:  "re := \"^\" + regexp.QuoteMeta(\"\") + prefix + \"[^/]+$\"",
			},
		},
	},
	{
		Name:     "files-grant-covers-subdirectories",
		Packages: []string{"./files"},
		Run:      "TestDeleteGrantCoversTheDirectory",
		Why:      "\"files directly in tmp/\" also covers tmp/sub/",
		Edits: []Edit{
			{
				File: "files/grants.go",
				Old:  "re := \"^\" + regexp.QuoteMeta(prefix) + \"[^/]+$\"",
				New:  "re := \"^\" + regexp.QuoteMeta(prefix) + \".+$\"",
			},
		},
	},
}
