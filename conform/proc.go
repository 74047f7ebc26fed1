package conform

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own and makes a cancelled
// context kill the whole group: the install's pip under env.sh's bash, the
// JVM under the runner's python, none left running after an interrupt.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
