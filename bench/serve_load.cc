// serve_load: a closed-loop KServe v2 gRPC load generator for `sdx serve` (bench/serve_bench.py --load cpp).
// N clients each keep one ModelInfer in flight (send, wait for the answer, send again) for a fixed time,
// all on one thread over gRPC's async completion queue, so the load costs far less CPU per request than
// Python clients do and leaves the cores to the server. Each client has its own connection (a local
// subchannel pool), as separate client processes would. Prints one JSON object: requests, errors,
// throughput, end-to-end latency quantiles, and the generator's own CPU seconds (user + system) over the
// measured time.
//
//   ninja -C build/dev sdx_serve_load
//   build/dev/sdx_serve_load --target 127.0.0.1:8001 --model mlp --input x --shape 1,512 --clients 16 --seconds 5
//
// The input is float32 (FP32) filled with a fixed pseudo-random sequence; the first answer of each client
// (connection set-up) and --warmup seconds of load are not measured.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kserve/grpc_service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string target = "127.0.0.1:8001", model, input = "x";
  std::vector<int64_t> shape = {1, 16};
  int clients = 16;
  double seconds = 5, warmup = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "serve_load: %s\nusage: serve_load --target HOST:PORT --model NAME [--input x] [--shape 1,16] "
               "[--clients 16] [--seconds 5] [--warmup 1]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage("missing a value after " + k);
    const std::string v = argv[++i];
    char* end = nullptr;
    if (k == "--target") {
      a.target = v;
    } else if (k == "--model") {
      a.model = v;
    } else if (k == "--input") {
      a.input = v;
    } else if (k == "--shape") {
      a.shape.clear();
      for (const char* p = v.c_str(); *p;) {
        const long long d = std::strtoll(p, &end, 10);
        if (end == p || d < 0) usage("--shape must be comma-separated sizes, not '" + v + "'");
        a.shape.push_back(d);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') usage("--shape must be comma-separated sizes, not '" + v + "'");
      }
    } else if (k == "--clients") {
      a.clients = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (*end || a.clients < 1 || a.clients > 4096) usage("--clients must be 1..4096, not '" + v + "'");
    } else if (k == "--seconds" || k == "--warmup") {
      const double s = std::strtod(v.c_str(), &end);
      if (*end || s < 0 || s > 3600) usage(k + " must be 0..3600, not '" + v + "'");
      (k == "--seconds" ? a.seconds : a.warmup) = s;
    } else {
      usage("unknown option " + k);
    }
  }
  if (a.model.empty()) usage("--model is required");
  if (a.seconds <= 0) usage("--seconds must be above 0");
  return a;
}

// `text` as the inside of a JSON string.
std::string json_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// One closed-loop client: its connection and the call in flight.
struct Client {
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub;
  std::unique_ptr<grpc::ClientContext> context;
  inference::ModelInferResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ModelInferResponse>> call;
  Clock::time_point sent;
  bool connected = false;  // its first answer came (connection set up): later ones are measured
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  inference::ModelInferRequest request;
  request.set_model_name(args.model);
  auto* in = request.add_inputs();
  in->set_name(args.input);
  in->set_datatype("FP32");
  int64_t count = 1;
  for (int64_t d : args.shape) {
    in->add_shape(d);
    count *= d;
  }
  std::vector<float> data(static_cast<size_t>(count));
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (float& f : data) f = normal(rng);
  request.add_raw_input_contents()->assign(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));

  grpc::CompletionQueue cq;
  std::vector<Client> clients(static_cast<size_t>(args.clients));
  auto send = [&](size_t i) {
    Client& c = clients[i];
    c.context = std::make_unique<grpc::ClientContext>();
    c.response.Clear();
    c.sent = Clock::now();
    c.call = c.stub->AsyncModelInfer(c.context.get(), request, &cq);
    c.call->Finish(&c.response, &c.status, reinterpret_cast<void*>(i));
  };
  for (size_t i = 0; i < clients.size(); ++i) {
    grpc::ChannelArguments ch;
    ch.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    ch.SetMaxReceiveMessageSize(-1);
    clients[i].stub = inference::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(args.target, grpc::InsecureChannelCredentials(), ch));
    send(i);
  }

  const Clock::time_point start = Clock::now();
  const Clock::time_point measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(args.warmup));
  const Clock::time_point measure_to = measure_from + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(args.seconds));
  std::vector<double> latency;
  latency.reserve(1 << 20);
  int64_t errors = 0;
  std::string first_error;
  double cpu_from = -1, cpu_to = -1;
  size_t in_flight = clients.size();
  while (in_flight > 0) {
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok)) break;
    const Clock::time_point now = Clock::now();
    if (cpu_from < 0 && now >= measure_from) cpu_from = cpu_seconds();
    if (cpu_to < 0 && now >= measure_to) cpu_to = cpu_seconds();
    const auto i = reinterpret_cast<size_t>(tag);
    Client& c = clients[i];
    const bool measured = c.connected && c.sent >= measure_from && now <= measure_to;
    if (!ok || !c.status.ok()) {
      if (measured || !c.connected) ++errors;
      if (first_error.empty()) first_error = ok ? c.status.error_message() : "the completion queue failed the call";
      if (!c.connected) {  // the first call failed: the server is not there; stop this client
        --in_flight;
        continue;
      }
    } else if (measured) {
      latency.push_back(std::chrono::duration<double>(now - c.sent).count());
    }
    c.connected = true;
    if (now < measure_to) {
      send(i);
    } else {
      --in_flight;
    }
  }
  if (cpu_from < 0) cpu_from = cpu_seconds();
  if (cpu_to < 0) cpu_to = cpu_seconds();
  std::sort(latency.begin(), latency.end());
  auto quantile = [&](double q) {
    return latency.empty() ? 0.0 : latency[std::min(latency.size() - 1, static_cast<size_t>(q * latency.size()))];
  };
  std::printf(
      "{\"clients\": %d, \"seconds\": %.3f, \"requests\": %zu, \"errors\": %lld, \"throughput_rps\": %.1f, "
      "\"p50_us\": %.1f, \"p99_us\": %.1f, \"client_cpu_s\": %.3f, \"client_cpu_us_per_request\": %.1f, "
      "\"first_error\": \"%s\"}\n",
      args.clients, args.seconds, latency.size(), static_cast<long long>(errors),
      static_cast<double>(latency.size()) / args.seconds, quantile(0.5) * 1e6, quantile(0.99) * 1e6,
      cpu_to - cpu_from, latency.empty() ? 0.0 : (cpu_to - cpu_from) / static_cast<double>(latency.size()) * 1e6,
      json_escaped(first_error.substr(0, 200)).c_str());
  return latency.empty() ? 1 : 0;
}
