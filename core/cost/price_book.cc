// Price book defaults and lookups.
#include "core/cost/price_book.h"

#include <cmath>
#include <cstdio>

namespace gpuvpa {
namespace {

std::string PriceText(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

PriceBook PriceBook::BuiltInDefaults() {
  PriceBook book;
  // AWS EC2 on-demand, us-east-1, Linux: instance price / GPUs in the instance, as collected on
  // 2026-11-09 by the public "data-receipts" GPU pricing survey (hyperscalers.json). These are
  // list prices including the instance's CPU and memory: an upper bound for the GPU alone.
  const char* kAwsSurvey = "AWS on-demand us-east-1, instance price / GPUs (survey of 2026-11-09)";
  (void)book.SetPrice("A100-40GB", "", 2.7447,
                      std::string(kAwsSurvey) + ": p4d.24xlarge $21.957642/h / 8");
  (void)book.SetPrice("A100-80GB", "", 3.4309,
                      std::string(kAwsSurvey) + ": p4de.24xlarge $27.44705/h / 8");
  (void)book.SetPrice("H100-80GB", "", 6.88,
                      std::string(kAwsSurvey) + ": p5.48xlarge $55.04/h / 8");
  // Single-GPU AWS instances, us-east-1 on-demand list prices (one GPU per instance).
  (void)book.SetPrice("T4-16GB", "", 0.526,
                      "AWS on-demand us-east-1: g4dn.xlarge $0.526/h, 1 x T4");
  (void)book.SetPrice("A10-24GB", "", 1.006,
                      "AWS on-demand us-east-1: g5.xlarge $1.006/h, 1 x A10G");
  (void)book.SetPrice("L4-24GB", "", 0.8048,
                      "AWS on-demand us-east-1: g6.xlarge $0.8048/h, 1 x L4");
  (void)book.SetPrice("V100-16GB", "", 3.06,
                      "AWS on-demand us-east-1: p3.2xlarge $3.06/h, 1 x V100 16GB");
  return book;
}

Status PriceBook::SetMaxPrice(double usd_per_gpu_hour) {
  if (!std::isfinite(usd_per_gpu_hour) || usd_per_gpu_hour <= 0 ||
      usd_per_gpu_hour > kMaxPriceBoundUsdPerGpuHour)
    return InvalidArgumentError("max_usd_per_gpu_hour " + PriceText(usd_per_gpu_hour) +
                                " is not in (0, " + PriceText(kMaxPriceBoundUsdPerGpuHour) + "]");
  for (const GpuPrice& p : prices_)
    if (p.usd_per_gpu_hour > usd_per_gpu_hour)
      return InvalidArgumentError("max_usd_per_gpu_hour " + PriceText(usd_per_gpu_hour) +
                                  " is below the price of " + p.gpu_model + " (" +
                                  PriceText(p.usd_per_gpu_hour) + ")");
  max_usd_per_gpu_hour_ = usd_per_gpu_hour;
  return OkStatus();
}

std::string PriceBook::CanonicalModel(std::string_view gpu_model) const {
  Result<const GpuModel*> model = catalog_->FindModel(gpu_model);
  return model.ok() ? (*model)->name : std::string(gpu_model);
}

bool PriceBook::KnowsModel(std::string_view gpu_model) const {
  return catalog_->FindModel(gpu_model).ok();
}

Status PriceBook::SetPrice(std::string_view gpu_model, std::string_view region,
                           double usd_per_gpu_hour, std::string source) {
  if (gpu_model.empty()) return InvalidArgumentError("price: gpu_model is empty");
  if (!std::isfinite(usd_per_gpu_hour) || usd_per_gpu_hour <= 0 ||
      usd_per_gpu_hour > max_usd_per_gpu_hour_)
    return InvalidArgumentError("price for GPU model \"" + std::string(gpu_model) +
                                "\": usd_per_gpu_hour " + PriceText(usd_per_gpu_hour) +
                                " is not in (0, " + PriceText(max_usd_per_gpu_hour_) +
                                "] (the bound is max_usd_per_gpu_hour)");
  const std::string model = CanonicalModel(gpu_model);
  for (GpuPrice& p : prices_) {
    if (p.gpu_model == model && p.region == region) {
      p.usd_per_gpu_hour = usd_per_gpu_hour;
      p.source = std::move(source);
      return OkStatus();
    }
  }
  prices_.push_back({model, std::string(region), usd_per_gpu_hour, std::move(source)});
  return OkStatus();
}

Result<double> PriceBook::GpuHourPrice(std::string_view gpu_model, std::string_view region) const {
  const std::string model = CanonicalModel(gpu_model);
  const GpuPrice* fallback = nullptr;
  for (const GpuPrice& p : prices_) {
    if (p.gpu_model != model) continue;
    if (!region.empty() && p.region == region) return p.usd_per_gpu_hour;
    if (p.region.empty()) fallback = &p;
  }
  if (fallback != nullptr) return fallback->usd_per_gpu_hour;
  return InvalidArgumentError("no price for GPU model \"" + std::string(gpu_model) + "\"" +
                              (region.empty() ? "" : " in region \"" + std::string(region) + "\"") +
                              ": add it under prices in the config");
}

Result<double> PriceBook::AllocationHourPrice(const GpuAllocation& allocation,
                                              std::string_view gpu_model,
                                              std::string_view region) const {
  Result<double> price = GpuHourPrice(gpu_model, region);
  if (!price.ok()) return price.status();
  Result<const GpuModel*> model = catalog_->FindModel(gpu_model);
  Result<double> fraction = DeviceFraction(allocation, model.ok() ? *model : nullptr);
  if (!fraction.ok()) return fraction.status();
  return allocation.count * *fraction * *price;
}

}  // namespace gpuvpa
