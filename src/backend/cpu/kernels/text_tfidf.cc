// TfIdfVectorizer: counts the n-grams of a pool (pool_int64s or pool_strings)
// found in each row of the input, optionally skipping up to max_skip_count items
// between the elements of an n-gram, and weights the counts (TF, IDF, TFIDF).
//
// The pool is loaded into a trie once at init(); n-gram ids follow pool order
// (1-based, 0 = "prefix only") and map to output columns via ngram_indexes.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/type_dispatch.h"
#include "backend/kernel_registry.h"

namespace sdx::cpu {
namespace {

using backend::KernelContext;

template <typename Key>
class NgramTrie {
 public:
  NgramTrie() : nodes_(1) {}

  // Inserts the n-gram keys[0..size) with the given id (ids of n-grams sharing a
  // full path overwrite each other, prefixes keep id 0 unless set).
  void insert(const Key* keys, int64_t size, int64_t id) {
    int32_t cur = 0;
    for (int64_t i = 0; i < size; ++i) {
      auto it = nodes_[static_cast<size_t>(cur)].children.find(keys[i]);
      int32_t next;
      if (it == nodes_[static_cast<size_t>(cur)].children.end()) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_[static_cast<size_t>(cur)].children.emplace(keys[i], next);
        nodes_.emplace_back();
      } else {
        next = it->second;
      }
      cur = next;
    }
    nodes_[static_cast<size_t>(cur)].id = id;
  }

  // Child of node for key, or -1.
  int32_t child(int32_t node, const Key& key) const {
    const auto& ch = nodes_[static_cast<size_t>(node)].children;
    auto it = ch.find(key);
    return it == ch.end() ? -1 : it->second;
  }
  bool has_children(int32_t node) const { return !nodes_[static_cast<size_t>(node)].children.empty(); }
  int64_t id(int32_t node) const { return nodes_[static_cast<size_t>(node)].id; }

 private:
  struct Node {
    int64_t id = 0;
    std::map<Key, int32_t> children;
  };
  std::vector<Node> nodes_;
};

enum class Weighting { kTF, kIDF, kTFIDF };

class TfIdfVectorizerKernel final : public backend::Kernel {
 public:
  Status init(const ir::Node& node) override {
    for (const char* name : {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts",
                             "ngram_indexes"})
      if (!node.attr(name)) return invalid_argument(std::string("missing required attribute '") + name + "'");
    const std::string mode = node.attr_string("mode", "");
    if (mode == "TF") weighting_ = Weighting::kTF;
    else if (mode == "IDF") weighting_ = Weighting::kIDF;
    else if (mode == "TFIDF") weighting_ = Weighting::kTFIDF;
    else return invalid_argument("mode must be TF, IDF or TFIDF, got '" + mode + "'");
    min_gram_ = node.attr_int("min_gram_length", 1);
    max_gram_ = node.attr_int("max_gram_length", 1);
    max_skip_ = node.attr_int("max_skip_count", 0);
    if (min_gram_ < 1 || max_gram_ < min_gram_)
      return invalid_argument("need 1 <= min_gram_length <= max_gram_length, got " + std::to_string(min_gram_) +
                              " and " + std::to_string(max_gram_));
    if (max_skip_ < 0) return invalid_argument("max_skip_count must be >= 0, got " + std::to_string(max_skip_));
    ngram_indexes_ = node.attr_ints("ngram_indexes");
    weights_ = node.attr_floats("weights");
    output_size_ = 0;
    for (int64_t v : ngram_indexes_) {
      if (v < 0) return invalid_argument("ngram_indexes must be >= 0, got " + std::to_string(v));
      output_size_ = std::max(output_size_, v + 1);
    }
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < output_size_)
      return invalid_argument("weights has " + std::to_string(weights_.size()) + " values, output size is " +
                              std::to_string(output_size_));
    const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
    const ir::Attribute* ps = node.attr("pool_strings");
    const ir::Attribute* pi = node.attr("pool_int64s");
    if ((ps != nullptr) == (pi != nullptr))
      return invalid_argument("exactly one of pool_int64s and pool_strings must be given");
    if (pi) {
      NgramTrie<int64_t> trie;
      SDX_RETURN_IF_ERROR(load_pool(pi->ints, counts, trie), "");
      trie_ = std::move(trie);
    } else {
      NgramTrie<std::string> trie;
      SDX_RETURN_IF_ERROR(load_pool(ps->strings, counts, trie), "");
      trie_ = std::move(trie);
    }
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t rows = 1, cols = 0;
    Shape out_shape;
    if (x.shape().rank() <= 1) {
      cols = x.numel();
      out_shape = Shape{output_size_};
    } else if (x.shape().rank() == 2) {
      rows = x.shape()[0];
      cols = x.shape()[1];
      out_shape = Shape{rows, output_size_};
    } else {
      return invalid_argument("input must be 1-D [C] or 2-D [N, C], got " + x.type_string());
    }
    SDX_ASSIGN_OR_RETURN(Tensor y, ctx.allocate_output(0, DType::kFloat32, out_shape), "");
    std::vector<int64_t> freq(static_cast<size_t>(rows * output_size_), 0);
    if (x.dtype() == DType::kString) {
      const auto* trie = std::get_if<NgramTrie<std::string>>(&trie_);
      if (!trie) return invalid_argument("string input needs pool_strings, the node has pool_int64s");
      count_all(x.data<std::string>(), rows, cols, *trie, freq.data());
    } else {
      const auto* trie = std::get_if<NgramTrie<int64_t>>(&trie_);
      if (!trie) return invalid_argument("integer input needs pool_int64s, the node has pool_strings");
      if (x.dtype() == DType::kInt64) {
        count_all(x.data<int64_t>(), rows, cols, *trie, freq.data());
      } else if (x.dtype() == DType::kInt32) {
        std::vector<int64_t> wide(x.data<int32_t>(), x.data<int32_t>() + x.numel());
        count_all(wide.data(), rows, cols, *trie, freq.data());
      } else {
        return invalid_argument("input must be int32, int64 or string, got " + x.type_string());
      }
    }
    float* py = y.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < output_size_; ++i) {
        const int64_t p = r * output_size_ + i;
        const auto f = static_cast<float>(freq[static_cast<size_t>(p)]);
        const float w = weights_.empty() ? 1.f : weights_[static_cast<size_t>(i)];
        switch (weighting_) {
          case Weighting::kTF: py[p] = f; break;
          case Weighting::kIDF: py[p] = f > 0 ? w : 0.f; break;
          case Weighting::kTFIDF: py[p] = w * f; break;
        }
      }
    }
    return Status::ok();
  }

 private:
  // ngram_counts[i] is where the (i+1)-grams start in the pool. Only sizes in
  // [min_gram, max_gram] enter the trie, but every n-gram consumes an id.
  template <typename Key>
  Status load_pool(const std::vector<Key>& pool, const std::vector<int64_t>& counts, NgramTrie<Key>& trie) const {
    const auto total = static_cast<int64_t>(pool.size());
    int64_t id = 1;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t size = static_cast<int64_t>(i) + 1;
      const int64_t begin = counts[i];
      const int64_t end = i + 1 < counts.size() ? counts[i + 1] : total;
      if (begin < 0 || end < begin || end > total)
        return invalid_argument("ngram_counts must be non-decreasing offsets within the pool of " +
                                std::to_string(total) + ", got " + std::to_string(begin) + " at position " +
                                std::to_string(i));
      const int64_t n = (end - begin) / size;
      if (id - 1 + n > static_cast<int64_t>(ngram_indexes_.size()))
        return invalid_argument("ngram_indexes has " + std::to_string(ngram_indexes_.size()) +
                                " entries, fewer than the n-grams in the pool");
      if (size >= min_gram_ && size <= max_gram_)
        for (int64_t g = 0; g < n; ++g) trie.insert(pool.data() + begin + g * size, size, id + g);
      id += n;
    }
    return Status::ok();
  }

  template <typename Key>
  void count_all(const Key* x, int64_t rows, int64_t cols, const NgramTrie<Key>& trie, int64_t* freq) const {
    for (int64_t r = 0; r < rows; ++r) count_row(x + r * cols, cols, trie, freq + r * output_size_);
  }

  // Unigrams are counted once (on the first skip distance); longer n-grams for
  // every skip distance 1..max_skip+1.
  template <typename Key>
  void count_row(const Key* row, int64_t cols, const NgramTrie<Key>& trie, int64_t* freq) const {
    int64_t start_size = min_gram_;
    for (int64_t skip = 1; skip <= max_skip_ + 1; ++skip) {
      for (int64_t start = 0; start < cols; ++start) {
        if (start + skip * (start_size - 1) >= cols) break;
        int32_t node = 0;
        int64_t item = start;
        for (int64_t size = 1; size <= max_gram_ && item < cols && trie.has_children(node); ++size, item += skip) {
          node = trie.child(node, row[item]);
          if (node < 0) break;
          const int64_t id = trie.id(node);
          if (size >= start_size && id != 0) ++freq[ngram_indexes_[static_cast<size_t>(id - 1)]];
        }
      }
      if (start_size == 1) {
        ++start_size;
        if (start_size > max_gram_) break;
      }
    }
  }

  Weighting weighting_ = Weighting::kTF;
  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0, output_size_ = 0;
  std::vector<int64_t> ngram_indexes_;
  std::vector<float> weights_;
  std::variant<NgramTrie<int64_t>, NgramTrie<std::string>> trie_;
};

const backend::KernelRegistrar kTfIdf({"TfIdfVectorizer", "", 9, backend::kAnyOpset,
                                       backend::kernel_factory<TfIdfVectorizerKernel>()});

}  // namespace
}  // namespace sdx::cpu
