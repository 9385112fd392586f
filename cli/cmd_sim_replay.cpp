// `rtfmri sim replay FILE --to ADDR`: send a 4D NIfTI to an ingest server at TR pace (or N times faster), with
// optional fault injection; prints what happened and fails unless every volume was acknowledged and the run closed.
#include <memory>

#include "cli/command_support.hpp"
#include "sim/replay/replay_command.hpp"

namespace {

void setup(CLI::App& app, rtf::cli::GlobalOptions& /*globals*/) {
  auto c = std::make_shared<rtf::sim::ReplayCommandOptions>();
  auto& o = c->options;
  auto* cmd = rtf::cli::sim_group(app).add_subcommand(
      "replay", "Send a 4D NIfTI to an ingest server like a scanner (protocol: docs/protocol.md)");
  cmd->add_option("FILE", c->file, "4D NIfTI (.nii or .nii.gz)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--to", o.address, "Server endpoint")->capture_default_str();
  cmd->add_option("--tr", o.tr_s, "TR in seconds (default: the file's pixdim[4])")->check(rtf::cli::positive());
  cmd->add_option("--speed", o.speed, "Times faster than real time; 0: as fast as the server acknowledges")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--lockstep", c->lockstep,
                  "HOST:PORT of the server's feedback lines (its feedback_tcp): send each volume only after the line "
                  "for the previous one arrived, so that the server analyses every volume however busy the machine is "
                  "(never faster than --speed)");
  cmd->add_option("--lockstep-timeout", o.lockstep_timeout_s,
                  "Seconds to wait for the server to connect and to finish a volume before giving up")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--start", o.start, "First volume of the file to send; it goes out as index 0")
      ->check(rtf::cli::non_negative())
      ->capture_default_str();
  cmd->add_option("--count", o.count, "Number of volumes to send (default: to the end)");
  cmd->add_option("--session", o.session, "Session id")->capture_default_str();
  cmd->add_option("--run", o.run, "Run id")->capture_default_str();
  cmd->add_option("--drop", o.faults.drop, "Fault: probability that a volume's first transmission is lost")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--duplicate", o.faults.duplicate, "Fault: probability that a volume is sent twice")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--reorder", o.faults.reorder, "Fault: probability that a volume swaps with the next")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--corrupt", o.faults.corrupt, "Fault: probability that a first transmission is corrupted")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--corrupt-target", c->corrupt_target, "What --corrupt damages")
      ->check(CLI::IsMember({"header", "payload", "both"}))
      ->capture_default_str();
  cmd->add_option("--jitter", o.faults.jitter_s, "Fault: extra random delay of up to S seconds per volume")
      ->check(rtf::cli::non_negative());
  cmd->add_option("--disconnect-after", o.faults.disconnect_after,
                  "Fault: drop the connection after N volumes, then reconnect and resend what is unacknowledged")
      ->check(rtf::cli::non_negative());
  cmd->add_option("--seed", o.faults.seed, "Seed of the fault plan")->capture_default_str();
  cmd->add_option("--resend-timeout", o.resend_timeout_s, "Seconds without a reply before a volume is resent")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_option("--finish-timeout", o.finish_timeout_s, "Seconds to wait for the last ACKs and END_OF_RUN")
      ->check(rtf::cli::positive())
      ->capture_default_str();
  cmd->add_flag("!--no-end-of-run", o.end_run, "Do not send END_OF_RUN (the run stays open)");
  cmd->add_option("--ack-log", o.ack_log, "Write 'run index' per acknowledged volume to this file as ACKs arrive");
  cmd->callback([c] { rtf::sim::run_replay_command(*c); });
}

RTF_REGISTER_COMMAND(81, setup);

}  // namespace
