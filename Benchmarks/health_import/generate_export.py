#!/usr/bin/env python3
"""Writes a synthetic Apple Health export.xml of about --mb megabytes (default 500).

Same shape as the Health app's export: the DTD header, <ExportDate>, <Me>, then mixed
<Record> types (steps, heart rate, energy, distance; about a fifth are DietaryWater from
several sources and units, some with <MetadataEntry> children), <Workout>s and
<ActivitySummary>s. Local times in Europe/Berlin with their offsets (so DST changes are in
it), deterministic (seeded), every water sample distinct. Prints the water-record count.

    python3 Benchmarks/health_import/generate_export.py --mb 500 --out /tmp/export-500mb.xml
"""
import argparse
import datetime
import random
import zoneinfo

DTD = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 13 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT ExportDate EMPTY>
<!ATTLIST ExportDate
  value CDATA #REQUIRED
>
<!ELEMENT Me EMPTY>
<!ATTLIST Me
  HKCharacteristicTypeIdentifierDateOfBirth         CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBiologicalSex       CDATA #REQUIRED
  HKCharacteristicTypeIdentifierBloodType           CDATA #REQUIRED
  HKCharacteristicTypeIdentifierFitzpatrickSkinType CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!ELEMENT MetadataEntry EMPTY>
<!ATTLIST MetadataEntry
  key   CDATA #REQUIRED
  value CDATA #REQUIRED
>
<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>
<!ATTLIST Workout
  workoutActivityType   CDATA #REQUIRED
  duration              CDATA #IMPLIED
  durationUnit          CDATA #IMPLIED
  sourceName            CDATA #REQUIRED
  sourceVersion         CDATA #IMPLIED
  creationDate          CDATA #IMPLIED
  startDate             CDATA #REQUIRED
  endDate               CDATA #REQUIRED
>
<!ELEMENT ActivitySummary EMPTY>
<!ATTLIST ActivitySummary
  dateComponents           CDATA #IMPLIED
  activeEnergyBurned       CDATA #IMPLIED
  activeEnergyBurnedGoal   CDATA #IMPLIED
  activeEnergyBurnedUnit   CDATA #IMPLIED
>
]>
<HealthData locale="de_DE">
 <ExportDate value="2026-01-01 10:00:00 +0100"/>
 <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-05-01" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet"/>
"""

DEVICE = "&lt;&lt;HKDevice: 0x283f5c0a0&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,1, software:10.4&gt;"
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
WATER = [("WaterMinder", "mL", lambda r: str(r.choice([150, 200, 250, 330, 500]))),
         ("iPhone von Ayşe", "L", lambda r: r.choice(["0.25", "0.5", "0.33", "1"])),
         ("Apple Watch von Ayşe", "fl_oz_us", lambda r: r.choice(["8", "12", "16.9"])),
         ("HidrateSpark", "cup_us", lambda r: r.choice(["1", "0.5", "1.5"])),
         ("Suplash", "mL", lambda r: str(r.choice([250, 330])))]
OTHER = [("HKQuantityTypeIdentifierStepCount", "count", lambda r: str(r.randint(10, 2000))),
         ("HKQuantityTypeIdentifierHeartRate", "count/min", lambda r: str(r.randint(50, 160))),
         ("HKQuantityTypeIdentifierActiveEnergyBurned", "Cal", lambda r: "%.3f" % r.uniform(0.1, 30)),
         ("HKQuantityTypeIdentifierDistanceWalkingRunning", "km", lambda r: "%.5f" % r.uniform(0.001, 1.5))]


def stamp(t):
    return t.astimezone(BERLIN).strftime("%Y-%m-%d %H:%M:%S %z")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=500)
    parser.add_argument("--out", default="/tmp/export-500mb.xml")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    limit = int(args.mb * 1024 * 1024)
    t = datetime.datetime(2016, 1, 1, tzinfo=datetime.timezone.utc)
    written = water = records = 0
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(DTD)
        written += len(DTD.encode())
        buf = []
        while written < limit:
            t += datetime.timedelta(seconds=rng.randint(60, 400))
            start = stamp(t)
            end = stamp(t + datetime.timedelta(seconds=rng.choice([0, 0, 60])))
            roll = rng.random()
            if roll < 0.2:
                source, unit, value = rng.choice(WATER)
                line = (f' <Record type="HKQuantityTypeIdentifierDietaryWater" sourceName="{source}" sourceVersion="5.2" '
                        f'unit="{unit}" creationDate="{end}" startDate="{start}" endDate="{start}" value="{value(rng)}"/>\n')
                water += 1
            elif roll < 0.98:
                kind, unit, value = rng.choice(OTHER)
                line = (f' <Record type="{kind}" sourceName="Apple Watch von Ayşe" sourceVersion="10.4" device="{DEVICE}" '
                        f'unit="{unit}" creationDate="{end}" startDate="{start}" endDate="{end}" value="{value(rng)}"')
                if rng.random() < 0.3:
                    line += '>\n  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>\n </Record>\n'
                else:
                    line += "/>\n"
            elif roll < 0.99:
                line = (f' <Workout workoutActivityType="HKWorkoutActivityTypeWalking" duration="31.5" durationUnit="min" '
                        f'sourceName="Apple Watch von Ayşe" sourceVersion="10.4" creationDate="{end}" startDate="{start}" '
                        f'endDate="{end}">\n  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n </Workout>\n')
            else:
                line = (f' <ActivitySummary dateComponents="{start[:10]}" activeEnergyBurned="410.2" '
                        f'activeEnergyBurnedGoal="500" activeEnergyBurnedUnit="Cal"/>\n')
            if line.startswith(" <Record"):
                records += 1
            buf.append(line)
            written += len(line.encode())
            if len(buf) >= 10000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
        out.write("</HealthData>\n")
    print(f"wrote {args.out}: {written / 1048576:.0f} MiB, {records} records, {water} water records, "
          f"last sample {stamp(t)}")


if __name__ == "__main__":
    main()
